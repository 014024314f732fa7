/// A picture's format, by its first bytes: what an extension's artwork may be.
enum ImageKind: String {
    case png, jpg, gif, webp

    init?(_ bytes: [UInt8]) {
        if bytes.starts(with: [0x89, 0x50, 0x4E, 0x47]) { self = .png }
        else if bytes.starts(with: [0xFF, 0xD8, 0xFF]) { self = .jpg }
        else if bytes.starts(with: Array("GIF8".utf8)) { self = .gif }
        else if bytes.count >= 12, bytes.starts(with: Array("RIFF".utf8)), Array(bytes[8..<12]) == Array("WEBP".utf8) { self = .webp }
        else { return nil }
    }
}
