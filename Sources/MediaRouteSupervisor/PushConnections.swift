import NIOCore
import Synchronization

/// The connections the push endpoint has open: at most `limit` at once, so that a client opening
/// connections without end cannot make the daemon hold more. Closing the endpoint closes them and
/// refuses later ones.
final class PushConnections: Sendable {
    private struct State {
        var open: [ObjectIdentifier: any Channel] = [:]
        var closing = false
    }
    let limit: Int
    private let state = Mutex(State())

    init(limit: Int) { self.limit = limit }

    /// Whether `channel` may be served; if so it is counted until it closes.
    func admit(_ channel: any Channel) -> Bool {
        let key = ObjectIdentifier(channel)
        let admitted = state.withLock { state in
            guard !state.closing, state.open.count < limit else { return false }
            state.open[key] = channel
            return true
        }
        if admitted {
            channel.closeFuture.whenComplete { _ in _ = self.state.withLock { $0.open.removeValue(forKey: key) } }
        }
        return admitted
    }

    /// Closes every open connection and refuses new ones; returns once they are closed.
    func closeAll() async {
        let open = state.withLock { state in
            state.closing = true
            return Array(state.open.values)
        }
        for channel in open { try? await channel.close() }
    }
}
