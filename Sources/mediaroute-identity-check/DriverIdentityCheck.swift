import Foundation

/// Checks one executable target's three identity places before it meets a supervisor: its
/// manifest's `protocol`, the manifest's `exportedType` (`identifier` equal to it, `conformsTo`
/// containing public.media-sharing-protocol), and the `protocolType` its code returns.
///
/// The manifest is the one among `candidateManifests` (the JSON files beside the target) whose
/// `executable` is the target's name; a target no manifest names is not a driver, unless its code
/// conforms to MediaDeviceExtension, which is reported.
struct DriverIdentityCheck: Sendable {
    let target: String
    let candidateManifests: [String]
    let sources: [String]
    let dependencySources: [String]

    struct Outcome: Sendable {
        var diagnostics: [IdentityDiagnostic] = []
        /// One line saying what was checked, for the build log and the generated stamp file.
        var summary: String
        var failed: Bool { diagnostics.contains { $0.severity == .error } }
    }

    func run() -> Outcome {
        let source = SourceIdentity(sources: sources, dependencySources: dependencySources)
        let manifests = candidateManifests.sorted().compactMap(ManifestIdentity.init(path:)).filter(\.isDriverManifest)
        let matching = manifests.filter { $0.names(executable: target) }
        guard let manifest = matching.first else {
            guard source.declaresDriver, let file = sources.sorted().first else {
                return Outcome(summary: "\(target) is not a driver (no manifest beside it names it)")
            }
            let looked = candidateManifests.isEmpty ? "there is no JSON file beside it" : "none of \(candidateManifests.sorted().joined(separator: ", ")) does"
            return Outcome(diagnostics: [.warning(file, line: nil,
                                                  "\(target) conforms to MediaDeviceExtension but no manifest names the executable \"\(target)\" (\(looked)); the supervisor runs a driver only through its manifest: `swift package new-driver` writes one")],
                           summary: "\(target): no manifest")
        }
        var outcome = Outcome(summary: "\(target): \(manifest.protocolID ?? "?") agrees in \(manifest.path) and the driver's protocolType")
        for other in matching.dropFirst() {
            outcome.diagnostics.append(.error(other.path, line: other.line(ofKey: "executable"),
                                              "this manifest and \(manifest.path) both name the executable \"\(target)\"; a driver has one manifest: remove one"))
        }
        outcome.diagnostics += manifest.problems()
        guard let protocolID = manifest.protocolID else { return outcome }
        switch source.find() {
        case let .identifier(identifier, use, declaration):
            if identifier != protocolID {
                let through = declaration.map { " (through the constant at \($0.file):\($0.line))" } ?? ""
                outcome.diagnostics.append(.error(use.file, line: use.line,
                                                  "identity mismatch: protocolType returns \"\(identifier)\"\(through) but the manifest \(manifest.path) says \"protocol\": \"\(protocolID)\"; the three names of a protocol must agree, so the supervisor would refuse this driver at its handshake"))
            }
        case let .unreadable(expression, use):
            outcome.diagnostics.append(.warning(use.file, line: use.line,
                                                "protocolType is computed (\(expression)), so the check cannot read its value; it must be \"\(protocolID)\", which the supervisor checks when the driver starts"))
            outcome.summary = "\(target): the manifest \(manifest.path) agrees with itself; protocolType is computed at run time"
        case .notFound:
            outcome.diagnostics.append(.warning(sources.sorted().first ?? manifest.path, line: nil,
                                                "no protocolType found in \(target)'s Swift files, so the check cannot compare it with the manifest's \"\(protocolID)\"; the supervisor checks it when the driver starts"))
            outcome.summary = "\(target): the manifest \(manifest.path) agrees with itself; protocolType not found in the source"
        }
        return outcome
    }
}
