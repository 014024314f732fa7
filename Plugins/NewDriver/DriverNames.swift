/// Every name a new driver gets, derived from its protocol identifier and its display name.
struct DriverNames: Sendable {
    /// Reverse-DNS, such as org.example.lamp: the manifest's `protocol` and `exportedType.identifier`,
    /// and what `protocolType` returns.
    let protocolID: String
    /// What the picker shows for the protocol: the manifest's `exportedType.description`.
    let displayName: String
    /// `Lamp` for "Lamp", `DeskLamp` for "Desk Lamp": the folder under Protocols/.
    let folder: String
    /// `mediaroute-desk-lamp-driver`: the executable target, product and manifest's `executable`.
    let executable: String

    var typeName: String { folder + "Driver" }
    var testTarget: String { typeName + "Tests" }
    var manifestFile: String { protocolID + ".json" }

    struct Refusal: Error, CustomStringConvertible {
        let description: String
    }

    init(protocolID: String, displayName: String, executable: String?) throws(Refusal) {
        let parts = protocolID.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count >= 2, protocolID.utf8.count <= 255,
              parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") } }) else {
            throw Refusal(description: "--protocol \"\(protocolID)\" is not a reverse-DNS identifier: give one such as org.example.lamp (letters, digits, - and _ between dots)")
        }
        let words = displayName.split { !($0.isASCII && ($0.isLetter || $0.isNumber)) }
        let folder = words.map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
        guard !displayName.isEmpty, displayName.count <= 64, let first = folder.first, first.isLetter else {
            throw Refusal(description: "--name \"\(displayName)\" must be 1 to 64 characters and begin with an ASCII letter: it is the name the picker shows and, without spaces, the folder under Protocols/ and the type name")
        }
        let slug = words.map { $0.lowercased() }.joined(separator: "-")
        self.protocolID = protocolID
        self.displayName = displayName
        self.folder = folder
        self.executable = executable ?? "mediaroute-\(slug)-driver"
    }
}
