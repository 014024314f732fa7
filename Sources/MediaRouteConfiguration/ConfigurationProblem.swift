/// Why mediarouted's configuration is refused: the file, the line and column when there is one,
/// and a sentence naming the key and what it must be. At start it stops the daemon (exit 78,
/// EX_CONFIG); on SIGHUP it is logged and the configuration in force stays.
public struct ConfigurationProblem: Error, Sendable, Hashable, CustomStringConvertible {
    /// The file; nil for a problem of the command line or the environment.
    public let path: String?
    public let line: Int?
    public let column: Int?
    public let reason: String

    public init(path: String?, line: Int? = nil, column: Int? = nil, reason: String) {
        self.path = path
        self.line = line
        self.column = column
        self.reason = reason
    }

    /// `PATH:LINE:COLUMN: reason`, as compilers say it, so editors can jump to it.
    public var description: String {
        guard let path else { return reason }
        let position = [line, column].compactMap { $0.map { ":\($0)" } }.joined()
        return "\(path)\(position): \(reason)"
    }

    /// What the daemon exits with when its configuration is wrong at start (sysexits' EX_CONFIG).
    public static let exitCode: Int32 = 78
}
