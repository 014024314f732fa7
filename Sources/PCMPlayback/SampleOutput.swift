/// What a sample-only driver lets local playback control: its device's output.
@MainActor public protocol SampleOutput: AnyObject {
    /// Paused: the sender stops reading (the device goes quiet; the source waits where it is).
    var isPaused: Bool { get set }
    /// The device's volume (0...1) and mute: a sample-only device has one volume, the session's.
    var volume: Float { get set }
    var isMuted: Bool { get set }
    /// The source jumped to `position` (a seek): what the device holds from before the jump should
    /// not be heard.
    func sourceJumped(to position: Double)
}
