import NIOCore
import Synchronization

/// The connections a NIO server has open: at most `limit` at once, so that a client opening
/// connections without end cannot make the server hold more, and all of them closed (and later
/// ones refused) when the server stops. Shared by every server of ours on SwiftNIO: DLNA's HTTP
/// server, AirPlay's DACP server, the supervisor's push endpoint.
public final class OpenChannels: Sendable {
    private struct State {
        var open: [ObjectIdentifier: any Channel] = [:]
        var closing = false
    }
    public let limit: Int
    private let state = Mutex(State())

    public init(limit: Int = .max) { self.limit = limit }

    /// Whether `channel` may be served; if so it is counted until it closes. One refused is the
    /// caller's to answer or close.
    public func admit(_ channel: any Channel) -> Bool {
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
    public func closeAll() async {
        let open = state.withLock { state in
            state.closing = true
            return Array(state.open.values)
        }
        for channel in open {
            channel.close(promise: nil)
            try? await channel.closeFuture.get()
        }
    }
}
