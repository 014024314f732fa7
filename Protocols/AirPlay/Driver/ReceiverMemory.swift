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
        entries = [:]
        guard let data = FileManager.default.contents(atPath: path) else { return }
        do {
            entries = try JSONDecoder().decode([String: Entry].self, from: data)
        } catch {
            log("\(path) cannot be read (\(error)): receivers' passwords and volumes start afresh")
        }
    }

    subscript(id: String) -> Entry {
        get { entries[id] ?? Entry() }
        set {
            guard entries[id] != newValue else { return }
            entries[id] = newValue
            save()
        }
    }

    /// Written whole to a new file made readable by the driver's user only (it holds passwords),
    /// flushed to the disk, and renamed into place: a crash leaves the old file or the new one.
    private func save() {
        guard let data = try? JSONEncoder().encode(entries) else { return }
        let temporary = path + ".new"
        unlink(temporary)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return log("cannot write \(temporary) (\(String(cString: strerror(errno)))): the receivers' passwords and volumes are not kept") }
        let written = data.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd) == 0
        close(fd)
        guard written == data.count, synced, rename(temporary, path) == 0 else {
            unlink(temporary)
            return log("cannot replace \(path) (\(String(cString: strerror(errno)))): the receivers' passwords and volumes are not kept")
        }
    }
}

/// A line for the operator: a driver's standard error goes to mediarouted's log.
func log(_ message: String) {
    FileHandle.standardError.write(Data("\(message)\n".utf8))
}
