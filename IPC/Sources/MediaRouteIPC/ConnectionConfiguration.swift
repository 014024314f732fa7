/// What to do when the peer breaks the protocol in a way the stream survives (bad JSON, a wrong
/// shape, a reply to an unknown id). Framing faults always disconnect: the stream is lost.
public enum ViolationPolicy: Sendable {
    /// Answer with an error and keep the connection: for peers we trust to recover.
    case reply
    /// Answer with an error, then disconnect: the supervisor's choice for drivers.
    case disconnect
}

/// Which side of the handshake this end plays, and whom it accepts on the other.
public enum HandshakeSide: Sendable {
    /// Sends `hello` and waits for the answer (drivers, apps, the CLI).
    case initiator(acceptingRoles: Set<Hello.Role> = [.supervisor])
    /// Waits for `hello` and answers it (the supervisor).
    case acceptor(acceptingRoles: Set<Hello.Role>)

    var acceptedRoles: Set<Hello.Role> {
        switch self {
        case .initiator(let roles), .acceptor(let roles): roles
        }
    }
}

public struct ConnectionConfiguration: Sendable {
    /// Who is on the other end, for error sentences until the handshake names the peer.
    public var label: String
    /// Largest frame this end accepts; announced in `hello`. The smaller of both sides applies.
    public var maximumFrameLength = FrameDecoder.defaultMaximumFrameLength
    public var handshakeTimeout: Duration = .seconds(5)
    public var defaultRequestTimeout: Duration = .seconds(30)
    /// Bytes of unsent output at which senders wait: the bound on outgoing memory.
    public var outgoingHighWater = 4 * 1024 * 1024
    /// How long a peer may take to finish a frame it began; a peer that goes quiet mid-frame is
    /// disconnected rather than allowed to pin the buffer (before `hello`, `handshakeTimeout` applies).
    public var frameReadTimeout: Duration = .seconds(10)
    /// How long the output may stay over `outgoingHighWater` with nothing taken by the peer before
    /// the connection is dropped (`-32008`); while it is over, nothing more is read from the peer.
    public var stalledReaderTimeout: Duration = .seconds(30)
    /// Requests from the peer that may be in progress at once; more is flooding.
    public var maximumConcurrentIncomingRequests = 256
    public var violationPolicy: ViolationPolicy = .reply
    /// The acceptor's last word on a peer's `hello` (its identity, say): an error refuses the
    /// handshake with that error, and nothing else reaches the handlers.
    public var acceptHello: (@Sendable (Hello) throws(RPCError) -> Void)?
    /// Told about every protocol violation by the peer, with a sentence naming it.
    public var onProtocolViolation: (@Sendable (RPCError) -> Void)?

    public init(label: String) { self.label = label }
}
