import NIOCore
import Synchronization

/// A connection to an HTTP server for a request not known yet (`HTTPClient.spareConnection`):
/// it connects once the request it was made beside is written (`response(...thenOpening:)`),
/// so that connecting does not hold that request up, and the next request to the server (a
/// renderer's GetProtocolInfo after its description) then goes out without waiting for a connect.
///
/// It carries one request, and only within `maximumIdle` of coming up: servers drop idle
/// connections (some TVs within seconds), and one dropped while the request is written loses
/// it. A request that waited that long for the one before saves nothing worth that risk.
public final class HTTPClientSpareConnection: Sendable {
    let host: String
    let port: Int
    private let maximumIdle: Duration
    private let promise: EventLoopPromise<any Channel>
    private let connect: @Sendable () -> EventLoopFuture<any Channel>
    private let opened = Atomic(false)
    private let claimed = Atomic(false)
    private let cameUp = Mutex<ContinuousClock.Instant?>(nil)

    init(host: String, port: Int, maximumIdle: Duration, on loop: any EventLoop, connect: @escaping @Sendable () -> EventLoopFuture<any Channel>) {
        (self.host, self.port, self.maximumIdle, self.connect) = (host, port, maximumIdle, connect)
        promise = loop.makePromise()
    }

    /// The connection, once up; failed when it could not be made or was closed unopened.
    var channel: EventLoopFuture<any Channel> { promise.futureResult }

    /// Starts connecting now (once), rather than when the request passed it as `thenOpening` is
    /// written: for a request whose content is still being made.
    public func open() {
        guard !opened.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let connecting = connect()
        connecting.whenSuccess { _ in self.cameUp.withLock { $0 = .now } }
        connecting.cascade(to: promise)
    }

    /// True for the one request it carries, false for any after.
    func claim() -> Bool { !claimed.exchange(true, ordering: .acquiringAndReleasing) }

    /// Whether it came up within `maximumIdle`.
    var isFresh: Bool { cameUp.withLock { $0.map { .now - $0 <= maximumIdle } ?? false } }

    /// Closes it: unused, it would hold one of the server's connections until the server drops it.
    /// A request it carried closes it too; closing again does nothing.
    public func close() {
        if opened.exchange(true, ordering: .acquiringAndReleasing) {
            channel.whenSuccess { $0.close(promise: nil) }
        } else {
            promise.fail(ChannelError.ioOnClosedChannel)
        }
    }
}
