/// Line numbers of places found in a file's text.
enum TextPosition {
    /// The 1-based line `index` falls on in `text`.
    static func line(of index: String.Index, in text: String) -> Int {
        text[..<index].utf8.reduce(1) { $1 == UInt8(ascii: "\n") ? $0 + 1 : $0 }
    }
}
