/// Why ffmpeg could not fetch or decode a URL, in a sentence a controller may see. ffmpeg's own
/// words can name things on the receiver's machine (a playlist's local entries, its paths, its
/// errno for them), and telling a controller which of those exist is a leak; so the controller gets
/// one of a few fixed reasons, about the server and the media only, and the full line goes to the
/// receiver's own log.
enum FetchFailure {
    /// The controller's sentence for ffmpeg's last line of standard error.
    static func reason(_ ffmpegError: String) -> String {
        // "Server returned 404 Not Found": ffmpeg's fixed wording for an HTTP status the server sent.
        if let range = ffmpegError.range(of: "Server returned "),
           case let status = ffmpegError[range.upperBound...],
           status.count <= 48, status.allSatisfy({ $0.isLetter || $0.isNumber || " ()".contains($0) }) {
            return "the server answered \(status)"
        }
        let reasons: [(String, String)] = [
            ("Connection refused", "the server refused the connection"),
            ("timed out", "the server did not answer in time"),
            ("Connection reset", "the server dropped the connection"),
            ("resolve", "its host name does not resolve"),
            ("Name or service not known", "its host name does not resolve"),
            ("Invalid data found", "it is not media the receiver can decode"),
        ]
        return reasons.first { ffmpegError.contains($0.0) }?.1 ?? "it cannot be fetched or decoded"
    }
}
