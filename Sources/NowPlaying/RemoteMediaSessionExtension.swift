/// The extension that makes an app's remote sessions: its own process, started by mediarouted
/// when a session is needed (the app started one, or a push did) and restarted if it crashes.
/// Write one `@main` type conforming to this protocol and a manifest naming the extension point
/// `org.mediaroute.nowplaying.remote-media` and your app; the SDK's `main()` does the rest.
///
/// The system keeps the sessions it returns and sends later updates and commands to the same
/// instance; open a connection to your backend or device once and share it across sessions.
@MainActor
public protocol RemoteMediaSessionExtension: SendableMetatype {
    associatedtype Attributes where Attributes == Session.Attributes
    associatedtype Session: RemoteMediaSessionRepresentable

    init()

    var configuration: RemoteMediaSessionExtensionConfiguration<Self> { get }

    /// The session for these attributes; what it throws ends the session's start with its sentence.
    func session(_ attributes: Attributes) async throws -> Session
}

extension RemoteMediaSessionExtension {
    /// The extension's entry point: serves mediarouted until it closes the channel.
    public static func main() async {
        await ExtensionRuntime.run(Self.self)
    }
}

/// Ties an extension instance to the system: return one made with `self` from `configuration`.
@MainActor
public final class RemoteMediaSessionExtensionConfiguration<Extension: RemoteMediaSessionExtension> {
    let `extension`: Extension

    public init(extension: Extension) {
        self.extension = `extension`
    }
}
