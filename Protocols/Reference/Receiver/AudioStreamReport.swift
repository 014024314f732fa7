import MediaCodecs
import ReferenceProtocol

extension ReferenceRequest.Status.AudioStream {
    /// What `status` reports of a stream's playout buffer.
    init(stream: String, _ statistics: AudioPlayoutBuffer.Statistics) {
        func ms(_ duration: Duration) -> Int { Int((duration / .milliseconds(1)).rounded()) }
        self.init(stream: stream, underruns: statistics.underruns, concealedFrames: statistics.concealedFrames, lost: statistics.lost, late: statistics.late,
                  bufferedMilliseconds: ms(statistics.bufferedDelay), targetMilliseconds: ms(statistics.targetDelay), jitterMilliseconds: ms(statistics.jitter))
    }
}
