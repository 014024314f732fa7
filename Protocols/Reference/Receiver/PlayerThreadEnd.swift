import Synchronization

/// Whether a player's thread has ended (its sound device closed), for those who await it without
/// blocking a thread: the event loop must never wait on a sound device.
final class PlayerThreadEnd: Sendable {
    private let state = Mutex<(ended: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))

    var hasEnded: Bool { state.withLock { $0.ended } }

    /// Called once by the thread, last.
    func markEnded() {
        let waiting = state.withLock { state in
            state.ended = true
            return state.waiting
        }
        waiting.forEach { $0.resume() }
    }

    /// Returns once the thread has ended.
    func wait() async {
        await withCheckedContinuation { continuation in
            let ended = state.withLock { state in
                if !state.ended { state.waiting.append(continuation) }
                return state.ended
            }
            if ended { continuation.resume() }
        }
    }
}
