/// What a sample ring carries: interleaved PCM audio, or I420 video frames.
public enum SampleFormat: Sendable, Hashable, CustomStringConvertible {
    public enum SampleType: Int, Sendable, Hashable {
        case float32 = 1
        case int16 = 2
        public var bytes: Int { self == .float32 ? 4 : 2 }
        public var name: String { self == .float32 ? "float32" : "int16" }
    }

    /// Interleaved PCM: `channels` samples per frame.
    case audio(sampleRate: Int, channels: Int, sampleType: SampleType)
    /// I420: a `width`×`height` Y plane, then U and V planes at half width and height, tightly packed.
    case video(width: Int, height: Int, frameRate: Int)

    /// 48 kHz stereo Float32: what an app writes unless it says otherwise.
    public static let defaultAudio = SampleFormat.audio(sampleRate: 48_000, channels: 2, sampleType: .float32)

    public var isAudio: Bool { if case .audio = self { true } else { false } }

    /// Bytes of one audio frame (all channels), or of one video frame.
    public var frameBytes: Int {
        switch self {
        case .audio(_, let channels, let type): channels * type.bytes
        case .video(let width, let height, _): width * height + 2 * ((width + 1) / 2) * ((height + 1) / 2)
        }
    }

    public var description: String {
        switch self {
        case .audio(let rate, let channels, let type): "\(rate) Hz, \(channels) channel\(channels == 1 ? "" : "s"), \(type.name)"
        case .video(let width, let height, let rate): "\(width)x\(height) I420 at \(rate) fps"
        }
    }

    /// The sample rates Opus encodes: a stream of any other would need resampling.
    public static let opusSampleRates = [8_000, 12_000, 16_000, 24_000, 48_000]

    /// Why these values cannot make a stream; nil if they can.
    public var problem: String? {
        switch self {
        case .audio(let rate, let channels, _):
            if !Self.opusSampleRates.contains(rate) { return "the sample rate must be 8000, 12000, 16000, 24000 or 48000 Hz, not \(rate)" }
            if !(1...2).contains(channels) { return "audio must have 1 or 2 channels, not \(channels)" }
        case .video(let width, let height, let rate):
            if !(16...3840).contains(width) || !(16...2160).contains(height) || width % 2 != 0 || height % 2 != 0 {
                return "video must be 16x16 to 3840x2160, in even dimensions, not \(width)x\(height)"
            }
            if !(1...120).contains(rate) { return "the frame rate must be 1 to 120 fps, not \(rate)" }
        }
        return nil
    }

    public var json: JSONValue {
        switch self {
        case .audio(let rate, let channels, let type):
            ["kind": "audio", "sampleRate": .integer(Int64(rate)), "channels": .integer(Int64(channels)), "sampleType": .string(type.name)]
        case .video(let width, let height, let rate):
            ["kind": "video", "width": .integer(Int64(width)), "height": .integer(Int64(height)), "frameRate": .integer(Int64(rate)), "pixelFormat": "I420"]
        }
    }

    /// Reads a format from the wire; the error names the member that is wrong.
    public init(json: JSONValue?) throws(RPCError) {
        guard let object = json?.objectValue else { throw .invalidParams("\"format\" must be an object with a \"kind\"") }
        func integer(_ key: String) throws(RPCError) -> Int {
            guard let value = object[key]?.integerValue, let int = Int(exactly: value) else { throw .invalidParams("\"format.\(key)\" must be an integer") }
            return int
        }
        switch object["kind"]?.stringValue {
        case "audio"?:
            let type: SampleType
            switch object["sampleType"] {
            case nil, "float32"?: type = .float32
            case "int16"?: type = .int16
            case let other?: throw .invalidParams("\"format.sampleType\" must be \"float32\" or \"int16\", not \(String(decoding: JSONWriter.encode(other), as: UTF8.self))")
            }
            self = .audio(sampleRate: try integer("sampleRate"), channels: try integer("channels"), sampleType: type)
        case "video"?:
            if let pixels = object["pixelFormat"], pixels != "I420" {
                throw .invalidParams("\"format.pixelFormat\" must be \"I420\", not \(String(decoding: JSONWriter.encode(pixels), as: UTF8.self))")
            }
            self = .video(width: try integer("width"), height: try integer("height"), frameRate: try integer("frameRate"))
        default:
            throw .invalidParams("\"format.kind\" must be audio or video")
        }
        if let problem { throw .invalidParams(problem) }
    }
}
