/// One finding of the identity check, printed the way a compiler prints its diagnostics
/// (`FILE:LINE: error: SENTENCE`), so that SwiftPM and editors show it at the place it names.
struct IdentityDiagnostic: Sendable, Equatable, CustomStringConvertible {
    enum Severity: String, Sendable { case error, warning, note }

    let severity: Severity
    let file: String
    /// 1-based; nil when the finding is about the file as a whole.
    let line: Int?
    let message: String

    static func error(_ file: String, line: Int?, _ message: String) -> Self { Self(severity: .error, file: file, line: line, message: message) }
    static func warning(_ file: String, line: Int?, _ message: String) -> Self { Self(severity: .warning, file: file, line: line, message: message) }

    var description: String { "\(file):\(line.map { "\($0):" } ?? "") \(severity.rawValue): \(message)" }
}
