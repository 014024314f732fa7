import Foundation

/// What the driver keeps of each receiver across activations and restarts, in its state
/// directory: the password that was accepted (asked once, not at every activation), and the
/// volume last set, restored at activation so a speaker never comes back at full volume
/// (shairport-sync users lose theirs at every reconnect).
@MainActor
final class ReceiverMemory {
    struct Entry: Codable, Equatable {
        var password: String?
        var volume: Float?
        var muted: Bool?
    }

    private let path: String
    private var entries: [String: Entry]

    init(stateDirectory: String) {
        path = (stateDirectory as NSString).appendingPathComponent("receivers.json")
        entries = (try? JSONDecoder().decode([String: Entry].self, from: Data(contentsOf: URL(fileURLWithPath: path)))) ?? [:]
    }

    subscript(id: String) -> Entry {
        get { entries[id] ?? Entry() }
        set {
            guard entries[id] != newValue else { return }
            entries[id] = newValue
            save()
        }
    }

    /// Written whole and renamed into place, readable by the driver's user only (it holds passwords).
    private func save() {
        guard let data = try? JSONEncoder().encode(entries) else { return }
        let temporary = path + ".new"
        guard FileManager.default.createFile(atPath: temporary, contents: data, attributes: [.posixPermissions: 0o600]) else {
            return log("cannot write \(temporary): the receivers' passwords and volumes are not kept")
        }
        if rename(temporary, path) != 0 { log("cannot replace \(path): \(String(cString: strerror(errno)))") }
    }
}

/// A line for the operator: a driver's standard error goes to mediarouted's log.
func log(_ message: String) {
    FileHandle.standardError.write(Data("\(message)\n".utf8))
}
