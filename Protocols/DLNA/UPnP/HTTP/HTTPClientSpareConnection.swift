import NIOCore
import Synchronization

/// A connection to an HTTP server for a request not known yet (`HTTPClient.spareConnection`):
/// it connects once the request it was made beside is sent (`response(...thenOpening:)`), so
/// that connecting does not hold that request up, and the next request to the server (a
/// renderer's GetProtocolInfo after its description) then goes out without waiting for a connect.
///
/// It carries one request, and only within `maximumIdle` of being opened: servers drop idle
/// connections (some TVs within seconds), and one dropped while the request is written loses
/// it. A request that waited that long for the one before saves nothing worth that risk.
public final class HTTPClientSpareConnection: Sendable {
    let address: SocketAddress
    private let maximumIdle: Duration
    private let state = Mutex(State())

    private struct State: ~Copyable {
        var opened: ContinuousClock.Instant?
        var socket: DirectTCPSocket?
        var claimed = false
        var closed = false
    }

    init(address: SocketAddress, maximumIdle: Duration) {
        (self.address, self.maximumIdle) = (address, maximumIdle)
    }

    /// Starts connecting now (once), on the calling thread, rather than when the request passed
    /// it as `thenOpening` is sent: for a request whose content is still being made. Under the
    /// lock (a connect does not block), so that a claim made meanwhile waits for it rather than
    /// opening a second connection.
    public func open() {
        state.withLock { state in
            guard state.opened == nil, !state.closed else { return }
            state.opened = .now
            switch DirectTCPSocket.open(to: address) {
            case .opened(let socket): state.socket = consume socket
            case .failed: break
            }
        }
    }

    /// For the one request it carries: the socket, opened now if it was not, if it is still
    /// fresh and the server has not closed it; nil for any request after, or when it is not fit
    /// (the request then makes a connection of its own, and an unfit socket is closed).
    func claim() -> DirectTCPSocket? {
        open()
        return state.withLock { state -> DirectTCPSocket? in
            guard !state.claimed else { return nil }
            state.claimed = true
            guard let socket = state.socket.take() else { return nil }
            guard let opened = state.opened, .now - opened <= maximumIdle, !socket.isSpoiled else { return nil }
            return .some(socket)
        }
    }

    /// Closes it: unused, it would hold one of the server's connections until the server drops it.
    /// Closing again, or after a request took it, does nothing.
    public func close() {
        let socket = state.withLock { state in
            state.closed = true
            return state.socket.take()
        }
        _ = consume socket
    }
}
