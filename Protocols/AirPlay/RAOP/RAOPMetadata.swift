/// What a sender tells a receiver about the track besides its audio, as `SET_PARAMETER` bodies:
/// the track's progress (`text/parameters`) and its title, artist and album (DMAP, as iTunes sends them).
public enum RAOPMetadata {
    /// `progress: start/current/end` in RTP timestamps (44.1 kHz frames, modulo 2³²): the track
    /// started `position` frames before `current` and ends `duration` frames after its start.
    public static func progressText(current: UInt32, positionFrames: UInt32, durationFrames: UInt32) -> String {
        let start = current &- positionFrames
        return "progress: \(start)/\(current)/\(start &+ durationFrames)\r\n"
    }

    /// A DMAP `mlit` (listing item) holding `minm` (title), `asar` (artist) and `asal` (album), each
    /// a four-letter tag, a 32-bit big-endian length and UTF-8 text; absent values are left out.
    public static func listingItem(title: String?, artist: String?, album: String?) -> [UInt8] {
        var items: [UInt8] = []
        for (tag, value) in [("minm", title), ("asar", artist), ("asal", album)] {
            guard let value else { continue }
            items += dmapItem(tag, Array(value.utf8))
        }
        return dmapItem("mlit", items)
    }

    static func dmapItem(_ tag: String, _ content: [UInt8]) -> [UInt8] {
        var bytes = Array(tag.utf8)
        bytes.appendBigEndian(UInt32(truncatingIfNeeded: content.count))
        return bytes + content
    }
}
