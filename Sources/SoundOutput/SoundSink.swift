/// Where interleaved Float32 PCM goes to be heard: a sound card (through ALSA) or nowhere at the
/// pace a card would take it. `write` blocks until the sink has taken every frame, which is what
/// paces the playout buffer in front of it: the sink's clock is the sound card's. One thread at a time.
public protocol SoundSink: AnyObject {
    var sampleRate: Int { get }
    var channels: Int { get }
    /// Writes `samples` (whole frames), waiting for room.
    func write(_ samples: UnsafeBufferPointer<Float>) throws(SoundOutputError)
    /// How long a frame written now takes to be heard (what the device still holds).
    var delay: Duration { get }
    /// Times the device ran dry and was restarted.
    var deviceUnderruns: Int { get }
    /// Closes the device, after playing what it holds when `draining`, else at once.
    func close(draining: Bool)
}
