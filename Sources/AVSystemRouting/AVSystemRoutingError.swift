import MediaDevice
import MediaRouteIPC

/// A failure on the app's side of routing: no daemon, a route that went away, a session used out
/// of order, a message too large. What a driver or device refused arrives as `MediaDeviceError`.
public struct AVSystemRoutingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Stable numbers (2000...2999) for programs.
    public enum Code: Int, Sendable, Hashable {
        /// mediarouted is not running or the connection to it was lost.
        case unavailable = 2001
        /// The route is no longer active (deactivated, its device or driver went away).
        case routeInactive = 2002
        /// `start()` before `addSession(_:)` returned true.
        case sessionNotAdded = 2003
        /// `start()` on a session that already started.
        case sessionAlreadyStarted = 2004
        /// The media session ended; start a new one.
        case sessionEnded = 2005
        /// A data message over `AVSystemRouteDataChannel.maximumMessageSize`.
        case messageTooLarge = 2006
        /// The daemon answered something this library does not understand (a version mismatch).
        case protocolError = 2007
        /// The app passed something the call cannot take (a wrong format, a partial frame); the
        /// sentence says what.
        case invalidArgument = 2008
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(message) (code \(code.rawValue))" }

    /// What a daemon error means to an app: device errors keep their code, the rest become
    /// `unavailable` (the connection failed) or `protocolError`.
    static func from(_ error: any Error) -> any Error {
        guard let rpc = error as? RPCError else { return error }
        if (1000...1999).contains(rpc.code.rawValue) { return MediaDeviceError(rpcError: rpc) }
        switch rpc.code {
        case .connectionClosed, .timedOut: return AVSystemRoutingError(.unavailable, "mediarouted did not answer: \(rpc.message)")
        default: return AVSystemRoutingError(.protocolError, rpc.message)
        }
    }
}
