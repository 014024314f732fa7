/// One stream `RAOPSender.play` started: how it ended, for whoever watches that stream and not
/// the next one (a pause, resume or seek starts a new stream on the same session).
public struct RAOPStream: Sendable {
    let streamer: RAOPStreamer

    /// How it ended, once it has.
    public var ended: RAOPStreamEnding {
        get async { await streamer.ended }
    }

    /// How it ended, nil while it runs.
    public var ending: RAOPStreamEnding? { streamer.ending }
}
