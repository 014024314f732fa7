/// The state of a remote session as the app and its extension share it: whatever the app needs
/// to describe the external device's playback. It travels as JSON (dates as ISO 8601 text, as a
/// push carries them) from the app, or from a push, to the extension's `session(_:)` and `update(_:)`.
public protocol RemoteMediaSessionAttributes: Codable {
    /// Names the session: an update or an end must carry the id it started with.
    var id: String { get }
}
