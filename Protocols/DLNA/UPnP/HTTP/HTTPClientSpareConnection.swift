import NIOCore

/// A connection to an HTTP server opened before its request is known (`HTTPClient.spareConnection`),
/// so that the request does not wait for the connect.
public struct HTTPClientSpareConnection: Sendable {
    let host: String
    let port: Int
    let channel: EventLoopFuture<any Channel>

    /// Closes it: unused, it would hold one of the server's connections until the server drops it.
    /// A request it carried closes it too; closing again does nothing.
    public func close() {
        channel.whenSuccess { $0.close(promise: nil) }
    }
}
