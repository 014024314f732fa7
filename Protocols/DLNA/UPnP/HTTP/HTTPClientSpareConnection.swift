import NIOCore
import Synchronization

/// A connection to an HTTP server for a request not known yet (`HTTPClient.spareConnection`):
/// it connects once the request it was made beside is written (`response(...thenOpening:)`),
/// so that connecting does not hold that request up, and the next request to the server (a
/// renderer's GetProtocolInfo after its description) then goes out without waiting for a connect.
public final class HTTPClientSpareConnection: Sendable {
    let host: String
    let port: Int
    private let promise: EventLoopPromise<any Channel>
    private let connect: @Sendable () -> EventLoopFuture<any Channel>
    private let opened = Atomic(false)

    init(host: String, port: Int, on loop: any EventLoop, connect: @escaping @Sendable () -> EventLoopFuture<any Channel>) {
        (self.host, self.port, self.connect) = (host, port, connect)
        promise = loop.makePromise()
    }

    /// The connection, once up; failed when it could not be made or was closed unopened.
    var channel: EventLoopFuture<any Channel> { promise.futureResult }

    /// Starts connecting (once).
    func open() {
        guard !opened.exchange(true, ordering: .acquiringAndReleasing) else { return }
        connect().cascade(to: promise)
    }

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
