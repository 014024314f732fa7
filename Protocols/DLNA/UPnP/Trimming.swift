extension StringProtocol {
    /// Without leading and trailing spaces, tabs, CRs and LFs (XML's and HTTP's whitespace).
    /// Foundation's `trimmingCharacters(in:)` costs microseconds a call on Linux, and a renderer's
    /// format list alone is hundreds of fields.
    var trimmed: String {
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A }
        let bytes = Array(utf8)
        guard let first = bytes.firstIndex(where: { !isSpace($0) }), let last = bytes.lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(decoding: bytes[first...last], as: UTF8.self)
    }
}
