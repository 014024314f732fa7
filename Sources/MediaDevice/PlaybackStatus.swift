import MediaRouteIPC

/// Everything `AVInterfaceControllable` says about a session, as one value: what a driver's
/// playback control publishes and what an app's mirror of it holds (IPC/README.md, "playback state").
public struct PlaybackStatus: Sendable, Hashable {
    public var isPlaying = false
    public var state = AVInterfacePlaybackState.stopped
    /// Seconds from the start.
    public var position = 0.0
    public var speed: Float = 1
    public var volume: Float = 1
    public var isMuted = false
    public var timeRange: ClosedRange<Double>?
    public var audioOptions: [String] = []
    public var selectedAudioOption: String?
    public var subtitleOptions: [String] = []
    public var selectedSubtitleOption: String?
    public var metadata = AVInterfaceMetadata()

    /// Reads the state a driver's playback control is in now.
    @MainActor
    public init(of control: any AVInterfaceControllable) {
        isPlaying = control.isPlaying
        state = control.state
        position = control.currentPlaybackPosition
        speed = control.playbackSpeed
        volume = control.volume
        isMuted = control.isMuted
        timeRange = control.timeRange
        audioOptions = control.audioOptions
        selectedAudioOption = control.selectedAudioOption
        subtitleOptions = control.subtitleOptions
        selectedSubtitleOption = control.selectedSubtitleOption
        metadata = control.metadata
    }

    public var json: JSONObject {
        var object: JSONObject = [
            "isPlaying": .bool(isPlaying), "state": .string(state.rawValue), "position": .double(position),
            "speed": speed.json, "volume": volume.json, "muted": .bool(isMuted),
            "audioOptions": .array(audioOptions.map { .string($0) }), "subtitleOptions": .array(subtitleOptions.map { .string($0) }),
            "metadata": metadata.json,
        ]
        if let timeRange { object["timeRange"] = [.double(timeRange.lowerBound), .double(timeRange.upperBound)] }
        if let selectedAudioOption { object["selectedAudioOption"] = .string(selectedAudioOption) }
        if let selectedSubtitleOption { object["selectedSubtitleOption"] = .string(selectedSubtitleOption) }
        return object
    }

    /// Reads a state from the wire. Members that are missing or of the wrong type keep their
    /// defaults: a newer driver may add members, and a state is informational, not a command.
    public init(json: JSONObject) {
        isPlaying = json["isPlaying"]?.boolValue ?? false
        state = json["state"]?.stringValue.flatMap(AVInterfacePlaybackState.init(rawValue:)) ?? (isPlaying ? .playing : .stopped)
        position = json["position"]?.doubleValue ?? 0
        speed = Float(json["speed"]?.doubleValue ?? 1)
        volume = Float(json["volume"]?.doubleValue ?? 1)
        isMuted = json["muted"]?.boolValue ?? false
        if let range = json["timeRange"]?.arrayValue, range.count == 2, let low = range[0].doubleValue, let high = range[1].doubleValue, low <= high {
            timeRange = low...high
        }
        audioOptions = json["audioOptions"]?.arrayValue?.compactMap(\.stringValue) ?? []
        selectedAudioOption = json["selectedAudioOption"]?.stringValue
        subtitleOptions = json["subtitleOptions"]?.arrayValue?.compactMap(\.stringValue) ?? []
        selectedSubtitleOption = json["selectedSubtitleOption"]?.stringValue
        let meta = json["metadata"]?.objectValue ?? [:]
        metadata = AVInterfaceMetadata(title: meta["title"]?.stringValue, artist: meta["artist"]?.stringValue,
                                       album: meta["album"]?.stringValue, artworkURL: meta["artworkURL"]?.stringValue)
    }
}

extension Float {
    /// The value as JSON, in its shortest decimal form: a driver's 0.3 travels as 0.3, not as the
    /// 0.30000001192092896 that widening the Float to a Double gives.
    public var json: JSONValue { .double(Double(description) ?? Double(self)) }
}
