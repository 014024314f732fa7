import AVSystemRouting
import Foundation
import MediaRouteIPC
import MediaRouteWire

/// An app's remote session: playback on an external device, shown by the system (on Linux, as an
/// MPRIS player on the desktop's media controls) and controlled through the app's extension.
///
/// Start, update and end it from the app; a server can do the same with pushes while the app is
/// not running. Every call goes to mediarouted over the app's connection (the one
/// `AVSystemRouteController` uses; `controller` chooses another, for programs that speak for
/// several apps and for tests).
@MainActor
public final class RemoteMediaSession<Attributes: RemoteMediaSessionAttributes>: Identifiable {
    public nonisolated let id: String
    /// Whether this app asked, through this object, that the session be the one the desktop's
    /// controls reach by the stable MPRIS name `org.mpris.MediaPlayer2.mediaroute`. It is not told
    /// when another app asks later and takes the name (`mediaroute nowplaying` says who has it).
    public private(set) var isSystemPrimary = false
    private let controller: AVSystemRouteController

    private init(id: String, controller: AVSystemRouteController) {
        self.id = id
        self.controller = controller
    }

    /// Starts a session: the app's extension makes it from `attributes` (its `session(_:)`).
    public static func start(attributes: Attributes, controller: AVSystemRouteController = .shared) async throws -> RemoteMediaSession<Attributes> {
        let encoded = try AttributesCoding.encode(attributes)
        let record = try await call(controller, App.StartRemoteSession(attributes: encoded))
        return RemoteMediaSession(id: record.id, controller: controller)
    }

    /// The app's sessions the system holds now, started by the app or by pushes.
    public static func sessions(controller: AVSystemRouteController = .shared) async throws -> [RemoteMediaSession<Attributes>] {
        try await call(controller, App.RemoteSessions()).sessions.map { RemoteMediaSession(id: $0.id, controller: controller) }
    }

    /// New attributes for the session: its extension's `update(_:)` gets them. The id must be this
    /// session's (`invalidAttributes` otherwise).
    public func update(_ attributes: Attributes) async throws {
        guard attributes.id == id else {
            throw RemoteMediaSessionError(.invalidAttributes, "the attributes' id \"\(attributes.id)\" is not this session's \"\(id)\"")
        }
        _ = try await Self.call(controller, App.UpdateRemoteSession(id: id, attributes: try AttributesCoding.encode(attributes)))
    }

    /// Ends the session: the desktop stops showing it and the extension lets it go.
    public func end() async throws {
        _ = try await Self.call(controller, App.EndRemoteSession(id: id))
    }

    /// Asks to be the session the desktop's controls reach by the stable MPRIS name. Linux has no
    /// foreground app: any running app may ask (a push cannot), and the last to ask has it.
    public func requestToBecomeSystemPrimary() async throws {
        _ = try await Self.call(controller, App.BecomeSystemPrimary(id: id))
        isSystemPrimary = true
    }

    // MARK: Push to start

    /// The token a server sends `start` pushes to, once the system provisioned it; nil until then
    /// (the first read asks mediarouted; `pushToStartTokenUpdates` waits for it).
    public static var pushToStartToken: Data? { pushToStartToken(controller: .shared) }

    /// The push-to-start token as soon as it is known, and again whenever it changes.
    public static var pushToStartTokenUpdates: AsyncStream<Data> { pushToStartTokenUpdates(controller: .shared) }

    /// `pushToStartToken` of the app of `controller`.
    public static func pushToStartToken(controller: AVSystemRouteController) -> Data? { PushToStartTokens.of(controller).current(controller: controller) }

    /// `pushToStartTokenUpdates` of the app of `controller`.
    public static func pushToStartTokenUpdates(controller: AVSystemRouteController) -> AsyncStream<Data> {
        PushToStartTokens.of(controller).updates(controller: controller)
    }

    // MARK: Parts

    /// One request; what fails becomes a `RemoteMediaSessionError` with mediarouted's sentence.
    static func call<Request: WireRequest>(_ controller: AVSystemRouteController, _ request: Request) async throws(RemoteMediaSessionError) -> Request.Result {
        do {
            return try await controller.request(request)
        } catch let error as MediaDeviceError {
            throw RemoteMediaSessionError(.internalFailure, error.message)
        } catch let error as AVSystemRoutingError {
            throw RemoteMediaSessionError(.internalFailure, error.message)
        } catch {
            throw RemoteMediaSessionError(.internalFailure, "\(error)")
        }
    }
}
