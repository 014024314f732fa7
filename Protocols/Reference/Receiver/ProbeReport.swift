import Foundation

/// What ffprobe says of a URL (`-of json`, the entries `MediaPlayer.probe` asks for): its
/// duration, title and first moving picture.
struct ProbeReport: Decodable {
    struct Format: Decodable {
        var duration: String?
        var tags: [String: String]?
    }
    struct Stream: Decodable {
        struct Disposition: Decodable { var attachedPic: Int? }
        var index: Int
        var codecType: String?
        var width: Int?
        var height: Int?
        var avgFrameRate: String?
        var disposition: Disposition?
    }
    var format: Format?
    var streams: [Stream]?

    /// Reads ffprobe's JSON; nil when it is not the report asked for.
    init?(json: String) {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        guard let report = try? decoder.decode(Self.self, from: Data(json.utf8)) else { return nil }
        self = report
    }

    /// The media at `url` as the player takes it.
    func media(_ url: String) -> MediaPlayer.Media {
        // The first video stream that is a moving picture: cover art is a still "attached picture".
        let picture = (streams ?? []).lazy.compactMap { stream -> MediaPlayer.Picture? in
            guard stream.codecType == "video", stream.disposition?.attachedPic != 1,
                  let width = stream.width, let height = stream.height, width > 0, height > 0 else { return nil }
            let rate = stream.avgFrameRate?.split(separator: "/").compactMap { Double($0) }
            let frameRate = rate.flatMap { $0.count == 2 && $0[1] > 0 ? $0[0] / $0[1] : nil }
            return MediaPlayer.Picture(stream: stream.index, width: width, height: height, frameRate: frameRate)
        }.first
        let title = format?.tags?.first { $0.key.lowercased() == "title" }?.value
        return MediaPlayer.Media(url: url, duration: format?.duration.flatMap { Double($0) }, title: title, picture: picture)
    }
}
