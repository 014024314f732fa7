import Foundation
import MediaDevice
import MediaRouteIPC

extension LocalMediaPlayer {
    /// What a URL is, found out before playing it.
    public struct Media: Sendable, Hashable {
        public let url: URL
        /// Seconds; nil for a live stream.
        public let duration: Double?
        public let metadata: AVInterfaceMetadata
    }

    /// What ffmpeg is given for `url`, and which of its protocols it may use; or why `url` is refused.
    ///
    /// An http(s) URL may lead only to the network, never to this machine's files (a playlist's
    /// entries are URLs too). A file URL is the controller's own file: the driver runs as the user.
    static func input(for url: URL) throws(LocalPlaybackError) -> (input: String, protocols: String) {
        switch url.scheme?.lowercased() {
        case "http", "https":
            guard let host = url.host, !host.isEmpty else {
                throw LocalPlaybackError(.unsupportedURL, "cannot play \(url.absoluteString): it names no host")
            }
            return (url.absoluteString, "http,https,tcp,tls,crypto")
        case "file":
            guard !url.path.isEmpty, url.host == nil || url.host == "" || url.host == "localhost" else {
                throw LocalPlaybackError(.unsupportedURL, "cannot play \(url.absoluteString): only files on this machine can be played")
            }
            // ffmpeg's file protocol takes the path as it is after "file:", not percent-encoded.
            return ("file:" + url.path, "file,http,https,tcp,tls,crypto")
        case let scheme?:
            throw LocalPlaybackError(.unsupportedURL, "cannot play \(url.absoluteString): \(scheme) URLs are not supported here (only http, https and file)")
        case nil:
            throw LocalPlaybackError(.unsupportedURL, "cannot play \(url.absoluteString): it is not a URL with a scheme (http, https or file)")
        }
    }

    /// Asks ffprobe what `url` is, fetching it as ffmpeg will; fails with the reason when it cannot
    /// be fetched, is not media, has no audio, or takes longer than `timeout` (a server that trickles).
    static func probe(_ url: URL, ffprobe: String, timeout: Duration) async throws(LocalPlaybackError) -> Media {
        let (input, protocols) = try Self.input(for: url)
        let output: ChildOutput
        do {
            output = try await ChildOutput.run(ffprobe, ["-v", "error", "-protocol_whitelist", protocols, "-rw_timeout", "5000000",
                                                         "-select_streams", "a:0", "-show_entries", "format=duration:format_tags:stream=codec_type:stream_tags",
                                                         "-of", "default=noprint_wrappers=1", input],
                                               outputLimit: 64 * 1024, timeout: timeout)
        } catch {
            throw LocalPlaybackError(.decoderUnavailable, "cannot play \(url.absoluteString): ffprobe (\(ffprobe)) cannot be started: \(error)")
        }
        guard output.termination == .exited(0) else {
            if output.termination == .signalled(SIGKILL) {
                throw LocalPlaybackError(.unreachable, "cannot play \(url.absoluteString): finding out what it is took longer than \(timeout)")
            }
            let reason = FFmpegFailure.reason(output.standardError) ?? "ffprobe \(output.termination)"
            let kind: LocalPlaybackError.Kind = output.standardError.contains("Invalid data found") ? .notMedia : .unreachable
            throw LocalPlaybackError(kind, "cannot play \(url.absoluteString): \(reason)")
        }
        var duration: Double?, hasAudio = false
        var tags: [String: String] = [:]
        for line in output.standardOutput.split(whereSeparator: \.isNewline) {
            if line == "codec_type=audio" { hasAudio = true }
            if line.hasPrefix("duration=") { duration = Double(line.dropFirst(9)) }
            // Tag names keep their container's case (Vorbis comments are often upper case).
            if line.hasPrefix("TAG:"), let equals = line.firstIndex(of: "=") {
                let key = line[line.index(line.startIndex, offsetBy: 4)..<equals].lowercased()
                let value = String(line[line.index(after: equals)...])
                if tags[key] == nil, !value.isEmpty { tags[key] = value }
            }
        }
        guard hasAudio else {
            throw LocalPlaybackError(.notMedia, "cannot play \(url.absoluteString): it has no audio")
        }
        return Media(url: url, duration: duration.flatMap { $0.isFinite && $0 > 0 ? $0 : nil },
                     metadata: AVInterfaceMetadata(title: tags["title"], artist: tags["artist"], album: tags["album"]))
    }
}
