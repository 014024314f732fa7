import Foundation
import MediaRouteIPC
import ReferenceProtocol

/// Who this controller is to receivers (a stable id) and the tokens receivers gave it when it paired,
/// kept in the driver's private state directory so later activations skip the code.
@MainActor
final class ControllerCredentials {
    let controllerID: String
    private var tokens: [String: String]
    private let path: String

    init(stateDirectory: String) {
        path = (stateDirectory as NSString).appendingPathComponent("reference-controller.json")
        let stored = FileManager.default.contents(atPath: path).flatMap { try? JSONReader.parse(Array($0)).objectValue }
        if let id = stored?["controllerId"]?.stringValue, ReceiverAnnouncement.isIdentifier(id) {
            controllerID = id
        } else {
            controllerID = UUID().uuidString.lowercased()
        }
        tokens = [:]
        for member in stored?["tokens"]?.objectValue?.members ?? [] { if let token = member.value.stringValue { tokens[member.key] = token } }
        if stored == nil { save() }
    }

    func token(for device: String) -> String? { tokens[device] }

    func remember(_ token: String?, for device: String) {
        tokens[device] = token
        save()
    }

    private func save() {
        let json: JSONValue = ["controllerId": .string(controllerID),
                               "tokens": .object(JSONObject(tokens.sorted { $0.key < $1.key }.map { (key: $0.key, value: .string($0.value)) }))]
        do {
            try JSONWriter.write(json, atomicallyTo: path)
        } catch {
            FileHandle.standardError.write(Data("cannot save pairing tokens to \(path): \(error)\n".utf8))
        }
    }
}
