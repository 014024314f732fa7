import DBus
import MediaDevice

/// Our `org.bluez.MediaPlayer1`, registered with `Media1.RegisterPlayer`: BlueZ turns the buttons
/// of a connected device (AVRCP: play, pause, next, ...) into calls on it.
@MainActor
final class RemoteControlPlayer {
    enum Button: String, CaseIterable {
        case play = "Play", pause = "Pause", stop = "Stop", next = "Next", previous = "Previous"
        case fastForward = "FastForward", rewind = "Rewind"

        var command: MediaRemoteCommand {
            switch self {
            case .play: .play
            case .pause: .pause
            case .stop: .stop
            case .next: .nextTrack
            case .previous: .previousTrack
            case .fastForward: .skipForward
            case .rewind: .skipBackward
            }
        }
    }

    /// A button was pressed on a device (BlueZ does not say which: the driver has one route per device at most).
    var pressed: (Button) -> Void = { _ in }
    /// What devices are told: "playing", "paused" or "stopped".
    var status = "stopped"

    nonisolated static func registration(status: String) -> [String: DBusValue] {
        ["PlaybackStatus": .string(status), "LoopStatus": .string("None"), "Shuffle": .boolean(false),
         "Metadata": .properties([:])]
    }

    nonisolated func interface() -> DBusInterface {
        DBusInterface(BlueZ.mediaPlayer, methods: Button.allCases.map { button in
            DBusMethod(button.rawValue) { _ throws(DBusError) in
                await self.press(button)
                return []
            }
        }, properties: [
            DBusProperty("PlaybackStatus", "s", get: { await .string(self.status) }),
        ])
    }

    private func press(_ button: Button) { pressed(button) }
}
