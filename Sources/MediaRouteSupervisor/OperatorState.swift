import Foundation
import MediaRouteIPC

/// What operators decide and must survive a restart, even `kill -9`: disabled drivers and each
/// device's preferred protocol. Every change is written to a temporary file, synced, and renamed
/// over `state.json`, so the file on disk is always a whole old or a whole new version.
public struct OperatorState: Sendable, Equatable {
    public var disabledDrivers: Set<String> = []
    /// Picker entry name -> protocol identifier.
    public var preferredProtocols: [String: String] = [:]

    public init() {}

    public static func load(from path: String) throws -> OperatorState {
        guard FileManager.default.fileExists(atPath: path) else { return OperatorState() }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw RPCError(.internalError, "cannot read the operator state \(path)")
        }
        let json: JSONValue
        do { json = try JSONReader.parse(Array(data)) } catch {
            throw RPCError(.internalError, "the operator state \(path) is damaged (\(error)); move it away to start afresh")
        }
        var state = OperatorState()
        state.disabledDrivers = Set(json.objectValue?["disabledDrivers"]?.arrayValue?.compactMap(\.stringValue) ?? [])
        for member in json.objectValue?["preferredProtocols"]?.objectValue?.members ?? [] {
            if let value = member.value.stringValue { state.preferredProtocols[member.key] = value }
        }
        return state
    }

    public func save(to path: String) throws {
        let json: JSONValue = [
            "disabledDrivers": .array(disabledDrivers.sorted().map { .string($0) }),
            "preferredProtocols": .object(JSONObject(preferredProtocols.sorted { $0.key < $1.key }.map { (key: $0.key, value: .string($0.value)) })),
        ]
        try JSONWriter.write(json, atomicallyTo: path)
    }
}
