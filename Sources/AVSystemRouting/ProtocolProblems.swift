import Foundation
import Synchronization

/// What mediarouted sent that this library could not read (a daemon of another version, or a bug
/// on either side). The app cannot act on it, but it is never dropped unseen: each one is written to
/// standard error, and the last few are kept for diagnostics.
final class ProtocolProblems: Sendable {
    static let kept = 16
    private let recent = Mutex<[String]>([])

    func report(_ sentence: String) {
        FileHandle.standardError.write(Data("AVSystemRouting: \(sentence)\n".utf8))
        recent.withLock { list in
            list.append(sentence)
            if list.count > Self.kept { list.removeFirst(list.count - Self.kept) }
        }
    }

    /// The latest reports, oldest first.
    var all: [String] { recent.withLock { $0 } }
}
