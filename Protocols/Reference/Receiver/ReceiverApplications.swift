import Foundation

/// The applications that run on the receiver and talk to apps over the data channel
/// (PROTOCOL.md §5). Each takes a message and returns its answers. Used on the event loop only.
final class ReceiverApplications: @unchecked Sendable {
    static let echo = "org.mediaroute.echo"
    static let notes = "org.mediaroute.notes"
    static let all = [echo, notes]

    private var noteList: [String] = []
    /// The notes' total size: `list` must fit in one application message.
    static let notesCapacity = 256 * 1024

    func has(_ application: String) -> Bool { Self.all.contains(application) }

    /// The application's answers to `message`.
    func handle(_ message: [UInt8], for application: String) -> [[UInt8]] {
        switch application {
        case Self.echo:
            return [message]
        case Self.notes:
            return [Array(notes(String(decoding: message, as: UTF8.self)).utf8)]
        default:
            return []
        }
    }

    private func notes(_ command: String) -> String {
        let trimmed = command.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.hasPrefix("add ") {
            let note = String(trimmed.dropFirst(4))
            guard noteList.reduce(0, { $0 + $1.utf8.count + 1 }) + note.utf8.count <= Self.notesCapacity else {
                return "full (\(Self.notesCapacity / 1024) KiB of notes); clear first"
            }
            noteList.append(note)
            return "noted \(noteList.count)"
        }
        switch trimmed {
        case "list": return noteList.joined(separator: "\n")
        case "clear":
            noteList.removeAll()
            return "cleared"
        default: return "unknown command"
        }
    }
}
