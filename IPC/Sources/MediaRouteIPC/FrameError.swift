/// A framing fault. Every one of them loses sync with the stream, so the connection must close.
public enum FrameError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A frame header announced length 0; the protocol has no empty messages.
    case zeroLength
    /// A frame header announced more bytes than the negotiated maximum.
    case tooLong(length: Int, maximum: Int)
    /// The stream ended inside a 4-byte length header.
    case truncatedHeader(received: Int)
    /// The stream ended inside a frame body.
    case truncatedBody(expected: Int, received: Int)

    /// How much of the frame arrived, for a stream that stopped inside one.
    public var progress: String {
        switch self {
        case .truncatedHeader(let received): "\(received) of the 4 bytes of a frame header"
        case .truncatedBody(let expected, let received): "\(received) of the \(expected) bytes of a frame body"
        default: description
        }
    }

    public var description: String {
        switch self {
        case .zeroLength:
            "frame header announces length 0; every frame must carry a JSON message"
        case .tooLong(let length, let maximum):
            "frame header announces \(length) bytes, over the negotiated maximum of \(maximum) bytes"
        case .truncatedHeader, .truncatedBody:
            "the peer closed the stream after \(progress)"
        }
    }
}
