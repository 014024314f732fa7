import Foundation
import MediaRouteWire
import Synchronization

/// Receives what the device's application sends on a data channel.
@MainActor
public protocol AVSystemRouteDataDelegate: AnyObject, Sendable {
    /// Called on the main actor, in the order the device sent the messages.
    func dataChannel(_ channel: AVSystemRouteDataChannel, didReceive data: Data)
}

/// Messages between the app and the application on the device: per route (`routeDataChannel`,
/// open while the route is active) or per media session (`.application` mode only).
///
/// Messages keep their order and arrive whole. Each is at most `maximumMessageSize` bytes.
public final class AVSystemRouteDataChannel: Sendable {
    /// The largest message, in bytes; larger ones are refused before they leave the app.
    public static let maximumMessageSize = 1 << 20

    enum Target: Sendable {
        case route(String)
        case session(String)
    }

    let target: Target
    private let daemon: DaemonConnection
    private struct State {
        weak var delegate: (any AVSystemRouteDataDelegate)?
        var closed: AVSystemRoutingError?
    }
    private let state = Mutex(State())

    init(target: Target, daemon: DaemonConnection) {
        self.target = target
        self.daemon = daemon
    }

    /// Told of every incoming message; not retained.
    public var dataDelegate: (any AVSystemRouteDataDelegate)? {
        get { state.withLock { $0.delegate } }
        set { state.withLock { $0.delegate = newValue } }
    }

    /// Sends one message; returns once the driver took it. Fails if the route or session is gone,
    /// or the message is too large.
    public func send(_ data: Data) async throws {
        if let closed = state.withLock({ $0.closed }) { throw closed }
        guard data.count <= Self.maximumMessageSize else {
            throw AVSystemRoutingError(.messageTooLarge, "a data message of \(data.count) bytes is over the \(Self.maximumMessageSize)-byte limit; split it")
        }
        // Base64 is made here, at the app's edge; the daemon passes the text on as it is.
        let payload = Base64Payload(data)
        switch target {
        case .route(let id): try await daemon.call(App.SendData(route: id, session: nil, data: payload))
        case .session(let id): try await daemon.call(App.SendData(route: nil, session: id, data: payload))
        }
    }

    func close(_ error: AVSystemRoutingError) {
        state.withLock { if $0.closed == nil { $0.closed = error } }
    }

    @MainActor
    func deliver(_ data: Data) {
        dataDelegate?.dataChannel(self, didReceive: data)
    }
}
