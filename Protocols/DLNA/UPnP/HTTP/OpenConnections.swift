import NIOCore
import Synchronization

/// The connections a server has open, so closing the server closes them too (and ends the
/// streams they serve). A connection accepted while the server closes is closed at once.
final class OpenConnections: Sendable {
    private struct State {
        var channels: [ObjectIdentifier: any Channel] = [:]
        var closed = false
    }
    private let state = Mutex(State())

    func insert(_ channel: any Channel) {
        let id = ObjectIdentifier(channel)
        let accepted = state.withLock { state in
            if state.closed { return false }
            state.channels[id] = channel
            return true
        }
        guard accepted else { return channel.close(promise: nil) }
        channel.closeFuture.whenComplete { _ in
            _ = self.state.withLock { $0.channels.removeValue(forKey: id) }
        }
    }

    /// Closes every connection and refuses later ones; returns once all are closed.
    func closeAll() async {
        let channels = state.withLock { state in
            state.closed = true
            return Array(state.channels.values)
        }
        for channel in channels {
            channel.close(promise: nil)
            try? await channel.closeFuture.get()
        }
    }
}
