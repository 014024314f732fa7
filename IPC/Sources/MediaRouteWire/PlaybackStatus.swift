/// Where playback stands on the device.
public enum AVInterfacePlaybackState: String, Sendable, Hashable, CaseIterable, Codable {
    case stopped, loading, playing, paused, ended, failed
}

/// What is playing, for Now Playing and the picker.
public struct AVInterfaceMetadata: Sendable, Hashable, Codable {
    public var title: String?
    public var artist: String?
    public var album: String?
    public var artworkURL: String?
    public init(title: String? = nil, artist: String? = nil, album: String? = nil, artworkURL: String? = nil) {
        self.title = title
        self.artist = artist
        self.album = album
        self.artworkURL = artworkURL
    }
}

/// Everything `AVInterfaceControllable` says about a session, as one value: what a driver's
/// playback control publishes and what an app's mirror of it holds (IPC/README.md §11.1).
public struct PlaybackStatus: Sendable, Hashable {
    public var isPlaying = false
    public var state = AVInterfacePlaybackState.stopped
    /// Seconds from the start.
    public var position = 0.0
    public var speed: Float = 1
    public var volume: Float = 1
    public var isMuted = false
    /// The part of the media that can be played and sought to, in seconds; nil while unknown.
    public var timeRange: ClosedRange<Double>?
    public var audioOptions: [String] = []
    public var selectedAudioOption: String?
    public var subtitleOptions: [String] = []
    public var selectedSubtitleOption: String?
    public var metadata = AVInterfaceMetadata()

    public init() {}
}

extension PlaybackStatus: Codable {
    private enum Keys: String, CodingKey {
        case isPlaying, state, position, speed, volume, muted, timeRange, audioOptions, selectedAudioOption, subtitleOptions,
             selectedSubtitleOption, metadata
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(isPlaying, forKey: .isPlaying)
        try container.encode(state, forKey: .state)
        try container.encode(position, forKey: .position)
        try container.encode(speed, forKey: .speed)
        try container.encode(volume, forKey: .volume)
        try container.encode(isMuted, forKey: .muted)
        try container.encodeIfPresent(timeRange.map { [$0.lowerBound, $0.upperBound] }, forKey: .timeRange)
        try container.encode(audioOptions, forKey: .audioOptions)
        try container.encodeIfPresent(selectedAudioOption, forKey: .selectedAudioOption)
        try container.encode(subtitleOptions, forKey: .subtitleOptions)
        try container.encodeIfPresent(selectedSubtitleOption, forKey: .selectedSubtitleOption)
        try container.encode(metadata, forKey: .metadata)
    }

    /// Members that are missing keep their defaults (a state is informational, and the defaults
    /// say "nothing known"); a member of the wrong type is an error naming it.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        isPlaying = try container.decodeIfPresent(Bool.self, forKey: .isPlaying) ?? false
        state = try container.decodeIfPresent(AVInterfacePlaybackState.self, forKey: .state) ?? (isPlaying ? .playing : .stopped)
        position = try container.decodeIfPresent(Double.self, forKey: .position) ?? 0
        speed = try container.decodeIfPresent(Float.self, forKey: .speed) ?? 1
        volume = try container.decodeIfPresent(Float.self, forKey: .volume) ?? 1
        isMuted = try container.decodeIfPresent(Bool.self, forKey: .muted) ?? false
        if let range = try container.decodeIfPresent([Double].self, forKey: .timeRange) {
            guard range.count == 2, range[0] <= range[1] else {
                throw WireDecodingError(path: container.codingPath + [Keys.timeRange], "must be [start, end] in seconds, start ≤ end")
            }
            timeRange = range[0]...range[1]
        }
        audioOptions = try container.decodeIfPresent([String].self, forKey: .audioOptions) ?? []
        selectedAudioOption = try container.decodeIfPresent(String.self, forKey: .selectedAudioOption)
        subtitleOptions = try container.decodeIfPresent([String].self, forKey: .subtitleOptions) ?? []
        selectedSubtitleOption = try container.decodeIfPresent(String.self, forKey: .selectedSubtitleOption)
        metadata = try container.decodeIfPresent(AVInterfaceMetadata.self, forKey: .metadata) ?? AVInterfaceMetadata()
    }
}
