import Foundation

/// One remote session inside the extension: what it plays, whether it plays, the commands it takes
/// and the devices it plays on. Make it `@Observable`: the system watches what these properties
/// read and shows every change at once, with no call to make.
@MainActor
public protocol RemoteMediaSessionRepresentable: Identifiable where ID == String {
    associatedtype Attributes: RemoteMediaSessionAttributes

    var id: String { get }
    var content: (any MediaContentRepresentable)? { get }
    var playbackSnapshot: MediaPlaybackSnapshot? { get }
    var commands: [MediaCommand] { get }
    var devices: [MediaDevice] { get }

    /// New attributes for this session, from the app or from a push: keep them.
    func update(_ attributes: Attributes)
}

extension RemoteMediaSessionRepresentable {
    /// The token a server sends this session's `update` and `end` pushes to; nil outside a
    /// running extension.
    public var pushToken: Data? { ExtensionRuntime.pushToken(of: id) }

    /// This session's push token now and whenever it changes, until the session ends.
    public var pushTokenUpdates: AsyncStream<Data> { ExtensionRuntime.pushTokenUpdates(of: id) }
}
