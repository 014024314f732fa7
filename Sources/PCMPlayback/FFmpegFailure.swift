/// Turns what ffmpeg or ffprobe printed on standard error into the reason a person can act on.
///
/// Written here rather than shared with the reference receiver's `FetchFailure`: that one hides
/// ffmpeg's own words from a remote controller (they can name the receiver's files), while here the
/// player runs as the user for the user's own apps, so an unrecognised line is worth showing as is.
enum FFmpegFailure {
    /// Lines that mean the input stopped early, even when ffmpeg then exits with status 0 (it treats
    /// a read error as the end of the input and keeps what it decoded).
    static let inputErrorMarkers = ["ends prematurely", "Input/output error", "Connection reset", "timed out", "Broken pipe"]

    /// The reason for ffmpeg's standard error `text` (its last lines), or nil if it said nothing.
    static func reason(_ text: String) -> String? {
        let lines = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        guard let last = lines.last else { return nil }
        let all = lines.joined(separator: "\n")
        // "Server returned 404 Not Found": ffmpeg's fixed wording for an HTTP status the server sent.
        if let range = all.range(of: "Server returned ") {
            let status = all[range.upperBound...].prefix { $0 != "\n" }
            return "the server answered \(status)"
        }
        let reasons: [(String, String)] = [
            ("Connection refused", "nothing accepts connections at that address (connection refused)"),
            ("ends prematurely", "the server stopped sending before the end of the media"),
            ("Connection reset", "the server dropped the connection"),
            ("timed out", "the server did not answer in time"),
            ("Name or service not known", "its host name does not resolve"),
            ("Failed to resolve", "its host name does not resolve"),
            ("No such file or directory", "there is no such file"),
            ("Permission denied", "the file cannot be read (permission denied)"),
            ("Invalid data found", "it is not media ffmpeg can decode"),
            ("Input/output error", "reading it failed (input/output error)"),
        ]
        if let match = reasons.first(where: { all.contains($0.0) }) { return match.1 }
        // "http://host/x.wav: Some error": drop the URL prefix ffmpeg puts before its message.
        let message = last.range(of: ": ", options: .backwards).map { String(last[$0.upperBound...]) } ?? last
        return "ffmpeg said: \(message.prefix(200))"
    }

    /// Whether standard error shows the input failed, even though ffmpeg exited with status 0.
    static func inputFailed(_ text: String) -> Bool {
        inputErrorMarkers.contains { text.contains($0) }
    }
}
