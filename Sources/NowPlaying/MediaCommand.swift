import Foundation
import MediaRouteWire

/// A command a session takes from the desktop's media controls, with what to do: forward it to the
/// external device. A command made `.enabled(false)` is shown unavailable and never called.
public struct MediaCommand {
    enum Action {
        case plain(() async throws -> Void)
        case position((TimeInterval) async throws -> Void)
    }

    let name: RemoteCommandName
    let action: Action
    public private(set) var isEnabled = true

    init(_ name: RemoteCommandName, _ action: Action) {
        self.name = name
        self.action = action
    }

    /// This command, enabled or not.
    public func enabled(_ isEnabled: Bool) -> MediaCommand {
        var command = self
        command.isEnabled = isEnabled
        return command
    }

    public static func play(_ action: @escaping () async throws -> Void) -> MediaCommand { MediaCommand(.play, .plain(action)) }
    public static func pause(_ action: @escaping () async throws -> Void) -> MediaCommand { MediaCommand(.pause, .plain(action)) }
    public static func togglePlayPause(_ action: @escaping () async throws -> Void) -> MediaCommand { MediaCommand(.togglePlayPause, .plain(action)) }
    public static func stop(_ action: @escaping () async throws -> Void) -> MediaCommand { MediaCommand(.stop, .plain(action)) }
    public static func next(_ action: @escaping () async throws -> Void) -> MediaCommand { MediaCommand(.next, .plain(action)) }
    public static func previous(_ action: @escaping () async throws -> Void) -> MediaCommand { MediaCommand(.previous, .plain(action)) }
    /// `action` gets the position asked for, in seconds from the start.
    public static func seekToPosition(_ action: @escaping (TimeInterval) async throws -> Void) -> MediaCommand {
        MediaCommand(.seekToPosition, .position(action))
    }
}
