import Foundation

/// The two identity places of a driver manifest (`protocol`, and `exportedType` with its
/// `identifier` and `conformsTo`), with the executable it names and the line each is written on.
struct ManifestIdentity: Sendable {
    static let mediaSharingProtocol = "public.media-sharing-protocol"

    let path: String
    let protocolID: String?
    let exportedIdentifier: String?
    let conformsTo: [String]?
    let executable: String?
    private let text: String

    /// Reads `path`; nil when it is not a JSON object (a file beside a driver that is not its manifest).
    init?(path: String) {
        guard let data = FileManager.default.contents(atPath: path),
              let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else { return nil }
        let exported = object["exportedType"] as? [String: Any]
        self.path = path
        protocolID = object["protocol"] as? String
        exportedIdentifier = exported?["identifier"] as? String
        conformsTo = (exported?["conformsTo"] as? [Any])?.compactMap { $0 as? String }
        executable = object["executable"] as? String
        text = String(decoding: data, as: UTF8.self)
    }

    /// Whether this is a protocol driver's manifest (NowPlaying extensions have no `exportedType`).
    var isDriverManifest: Bool { protocolID != nil || exportedIdentifier != nil }

    /// Whether it names `executable` (by its last path component, as a drivers directory resolves it).
    func names(executable name: String) -> Bool {
        executable.map { ($0 as NSString).lastPathComponent == name } ?? false
    }

    /// The line the member `key` is written on (its first occurrence as a key).
    func line(ofKey key: String) -> Int? {
        guard let range = text.range(of: "\"\(key)\"\\s*:", options: .regularExpression) else { return nil }
        return TextPosition.line(of: range.lowerBound, in: text)
    }

    /// The manifest's own findings: `protocol` and `exportedType.identifier` present and equal, and
    /// `conformsTo` containing public.media-sharing-protocol.
    func problems() -> [IdentityDiagnostic] {
        var problems: [IdentityDiagnostic] = []
        guard let protocolID, !protocolID.isEmpty else {
            return [.error(path, line: line(ofKey: "protocol"), "\"protocol\" is missing: write the protocol's reverse-DNS identifier, such as org.example.lamp")]
        }
        if let exportedIdentifier {
            if exportedIdentifier != protocolID {
                problems.append(.error(path, line: line(ofKey: "identifier"),
                                       "identity mismatch: \"exportedType.identifier\" is \"\(exportedIdentifier)\" but \"protocol\" is \"\(protocolID)\"; the three names of a protocol must agree, so the supervisor would refuse this driver"))
            }
        } else {
            problems.append(.error(path, line: line(ofKey: "exportedType"),
                                   "\"exportedType.identifier\" is missing: it must be \"\(protocolID)\", the same as \"protocol\""))
        }
        if !(conformsTo ?? []).contains(Self.mediaSharingProtocol) {
            problems.append(.error(path, line: line(ofKey: "conformsTo") ?? line(ofKey: "exportedType"),
                                   "\"exportedType.conformsTo\" must contain \"\(Self.mediaSharingProtocol)\" (it has \((conformsTo ?? []).map { "\"\($0)\"" }.joined(separator: ", ").nonEmpty ?? "nothing")); without it the supervisor refuses the driver"))
        }
        return problems
    }
}

extension String {
    var nonEmpty: String? { isEmpty ? nil : self }
}
