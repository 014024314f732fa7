import MediaRouteWire

/// What the supervisor remembers of one device across rediscovery, driver restarts and daemon
/// restarts: its nickname and its last volume and mute. Keyed by protocol and device id, which
/// drivers keep stable across discoveries (IPC/README.md §11.1).
struct RememberedDevice: Codable, Sendable, Equatable {
    let `protocol`: String
    let id: String
    /// The name its driver gives it: shown again when its nickname is cleared.
    var ownName: String
    /// Shown, and accepted in every command, in place of its own name.
    var nickname: String?
    /// The last level (0...1) and mute its driver reported while it was active.
    var volume: Float?
    var muted: Bool?
    /// When this entry last changed, seconds since 1970: the longest unchanged are forgotten first.
    var lastUsed: Double

    struct Key: Hashable {
        let protocolID: String
        let id: String
    }

    var key: Key { Key(protocolID: `protocol`, id: id) }

    /// Whether anything is left to remember.
    var isEmpty: Bool { nickname == nil && volume == nil && muted == nil }
}
