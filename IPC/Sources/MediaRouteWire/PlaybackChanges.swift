import MediaRouteIPC

/// The settable playback properties an app or the operator changes (`playback.set`): members left
/// out stay as they are. The driver applies them in declaration order, seek before play.
package struct PlaybackChanges: Codable, Sendable, Hashable {
    package var position: Double?
    package var speed: Float?
    package var volume: Float?
    package var muted: Bool?
    /// `.some(nil)` selects no track; nil leaves the selection alone.
    package var selectedAudioOption: String??
    package var selectedSubtitleOption: String??
    package var isPlaying: Bool?

    package init(position: Double? = nil, speed: Float? = nil, volume: Float? = nil, muted: Bool? = nil,
                 selectedAudioOption: String?? = nil, selectedSubtitleOption: String?? = nil, isPlaying: Bool? = nil) {
        self.position = position
        self.speed = speed
        self.volume = volume
        self.muted = muted
        self.selectedAudioOption = selectedAudioOption
        self.selectedSubtitleOption = selectedSubtitleOption
        self.isPlaying = isPlaying
    }

    private enum Keys: String, CodingKey { case position, speed, volume, muted, selectedAudioOption, selectedSubtitleOption, isPlaying }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        func number(_ key: Keys, in range: ClosedRange<Double>) throws -> Double? {
            guard let n = try container.decodeIfPresent(Double.self, forKey: key) else { return nil }
            guard range.contains(n) else { throw WireDecodingError(path: container.codingPath + [key], "must be from \(range.lowerBound) to \(range.upperBound), not \(n)") }
            return n
        }
        func selection(_ key: Keys) throws -> String?? {
            container.contains(key) ? .some(try container.decodeIfPresent(String.self, forKey: key)) : .none
        }
        position = try number(.position, in: 0...1e9)
        speed = try number(.speed, in: -64...64).map(Float.init)
        volume = try number(.volume, in: 0...1).map(Float.init)
        muted = try container.decodeIfPresent(Bool.self, forKey: .muted)
        selectedAudioOption = try selection(.selectedAudioOption)
        selectedSubtitleOption = try selection(.selectedSubtitleOption)
        isPlaying = try container.decodeIfPresent(Bool.self, forKey: .isPlaying)
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encodeIfPresent(position, forKey: .position)
        try container.encodeIfPresent(speed, forKey: .speed)
        try container.encodeIfPresent(volume, forKey: .volume)
        try container.encodeIfPresent(muted, forKey: .muted)
        for (key, value) in [(Keys.selectedAudioOption, selectedAudioOption), (.selectedSubtitleOption, selectedSubtitleOption)] {
            guard case .some(let selection) = value else { continue }
            if let selection { try container.encode(selection, forKey: key) } else { try container.encodeNil(forKey: key) }
        }
        try container.encodeIfPresent(isPlaying, forKey: .isPlaying)
    }
}
