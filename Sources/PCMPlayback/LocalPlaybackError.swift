/// Why a URL cannot be played here, or a change to its playback was refused: a sentence naming the
/// URL or value and what is wrong with it, for the app that asked.
public struct LocalPlaybackError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        /// Not an http, https or file URL.
        case unsupportedURL
        /// It could not be fetched: no server, an HTTP error, a missing file, too slow.
        case unreachable
        /// It was fetched but holds no audio ffmpeg can decode.
        case notMedia
        /// ffmpeg or ffprobe could not be started.
        case decoderUnavailable
        /// A value outside what local playback can do (a speed out of range).
        case outOfRange
    }

    public let kind: Kind
    public let description: String

    public init(_ kind: Kind, _ description: String) {
        self.kind = kind
        self.description = description
    }
}
