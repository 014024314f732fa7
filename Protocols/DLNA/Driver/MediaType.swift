import Foundation

/// MIME types of the media people play, from the file name: renderers choose a decoder by the
/// type we announce, so a file served without one is a file most renderers refuse.
enum MediaType {
    static let byExtension: [String: String] = [
        "mp3": "audio/mpeg", "wav": "audio/wav", "flac": "audio/flac", "ogg": "audio/ogg", "oga": "audio/ogg", "opus": "audio/ogg",
        "m4a": "audio/mp4", "aac": "audio/aac", "mp4": "video/mp4", "m4v": "video/mp4", "mkv": "video/x-matroska", "webm": "video/webm",
        "avi": "video/x-msvideo", "mov": "video/quicktime", "ts": "video/mp2t", "jpg": "image/jpeg", "jpeg": "image/jpeg", "png": "image/png",
    ]

    static func of(_ url: URL) -> String? { byExtension[url.pathExtension.lowercased()] }
}
