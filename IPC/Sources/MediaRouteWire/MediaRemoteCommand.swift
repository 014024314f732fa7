/// A command from the device's own controls (a headphone's play/pause button, a car's next
/// button), for the app whose audio plays there: the remote control events of a media app.
public enum MediaRemoteCommand: String, Sendable, Hashable, CaseIterable, Codable {
    case play, pause, togglePlayPause, stop, nextTrack, previousTrack, skipForward, skipBackward
}
