import Foundation
import MediaRouteIPC

/// What a URL holds, found out with ffprobe before it plays: its length and tags, or why it
/// cannot play (unreachable, not media) in the words ffprobe used.
struct MediaProbe: Sendable {
    var duration: Double?
    var title: String?
    var artist: String?
    var album: String?

    /// What ffmpeg may open for a URL the local player plays: the network, and files for a file
    /// URL (the driver runs as the person whose files they are).
    static func protocols(for url: URL) -> [String] {
        ["-protocol_whitelist", url.isFileURL ? "file,pipe" : "http,https,tcp,tls,crypto"]
    }

    /// The URL as ffmpeg takes it.
    static func input(_ url: URL) -> String { url.isFileURL ? url.path : url.absoluteString }

    static func probe(_ url: URL, ffprobe: String, timeout: Duration = .seconds(15)) async throws(LocalPlaybackError) -> MediaProbe {
        let output: ChildOutput
        do {
            output = try await ChildOutput.run(ffprobe, ["-v", "error"] + protocols(for: url) + ["-rw_timeout", "5000000",
                                               "-show_entries", "format=duration:format_tags=title,artist,album", "-of", "default=noprint_wrappers=1", input(url)],
                                               outputLimit: 64 * 1024, timeout: timeout)
        } catch {
            throw LocalPlaybackError("cannot run \(ffprobe) to look at \(url.absoluteString): \(error)")
        }
        guard output.termination == .exited(0) else {
            if output.termination == .signalled(SIGKILL) {
                throw LocalPlaybackError("cannot play \(url.absoluteString): finding out what it is took longer than \(timeout)")
            }
            let line = output.standardError.split(separator: "\n").last.map(String.init) ?? "ffprobe \(output.termination)"
            throw LocalPlaybackError("cannot play \(url.absoluteString): \(line)")
        }
        var probe = MediaProbe()
        for line in output.standardOutput.split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2 else { continue }
            switch parts[0] {
            case "duration": probe.duration = Double(parts[1])
            case "TAG:title": probe.title = parts[1]
            case "TAG:artist": probe.artist = parts[1]
            case "TAG:album": probe.album = parts[1]
            default: break
            }
        }
        guard probe.duration != nil || output.standardOutput.contains("duration=N/A") else {
            throw LocalPlaybackError("cannot play \(url.absoluteString): ffprobe found no media in it")
        }
        return probe
    }
}
