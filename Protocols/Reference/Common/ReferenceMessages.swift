import MediaDevice
import MediaRouteIPC

/// Every message of the reference protocol (PROTOCOL.md §3-§4.1), one type each, defined once
/// and used by the driver (the controller) and the receiver: requests a controller sends, and the
/// notifications a receiver sends back.
package enum ReferenceRequest {
    /// An empty answer, `{}`.
    package struct Done: Codable, Sendable { package init() {} }

    package struct AuthToken: WireRequest {
        package typealias Result = Done
        package static let method = "auth.token"
        package let token: String
        package init(token: String) { self.token = token }
    }

    package struct PairBegin: WireRequest {
        package struct Begun: Codable, Sendable {
            package let authorization: MediaOutputDevice.AuthorizationMethod
            package init(authorization: MediaOutputDevice.AuthorizationMethod) { self.authorization = authorization }
        }
        package typealias Result = Begun
        package static let method = "pair.begin"
        package init() {}
    }

    package struct PairFinish: WireRequest {
        package struct Paired: Codable, Sendable {
            package let token: String
            package init(token: String) { self.token = token }
        }
        package typealias Result = Paired
        package static let method = "pair.finish"
        package let code: String
        package init(code: String) { self.code = code }
    }

    package struct Status: WireRequest {
        package struct Session: Codable, Sendable {
            package let session: String
            package let state: ReceiverPlaybackState
            package init(session: String, state: ReceiverPlaybackState) { (self.session, self.state) = (session, state) }
        }
        /// A real-time audio stream's playout: what its buffer holds and aims at, and how often it ran dry.
        package struct AudioStream: Codable, Sendable {
            package let stream: String
            package let underruns: Int
            package let concealedFrames: Int
            package let lost: Int
            package let late: Int
            package let bufferedMilliseconds: Int
            package let targetMilliseconds: Int
            package let jitterMilliseconds: Int
            package init(stream: String, underruns: Int, concealedFrames: Int, lost: Int, late: Int, bufferedMilliseconds: Int, targetMilliseconds: Int, jitterMilliseconds: Int) {
                (self.stream, self.underruns, self.concealedFrames, self.lost, self.late) = (stream, underruns, concealedFrames, lost, late)
                (self.bufferedMilliseconds, self.targetMilliseconds, self.jitterMilliseconds) = (bufferedMilliseconds, targetMilliseconds, jitterMilliseconds)
            }
        }
        package struct Report: Codable, Sendable {
            package let volume: Double
            package let muted: Bool
            /// Only the asking controller's own, and only once it is authorized.
            package let sessions: [Session]
            /// The asking controller's real-time audio streams, when it has any open.
            package let streams: [AudioStream]?
            package init(volume: Double, muted: Bool, sessions: [Session], streams: [AudioStream]? = nil) {
                (self.volume, self.muted, self.sessions, self.streams) = (volume, muted, sessions, streams)
            }
        }
        package typealias Result = Report
        package static let method = "status"
        package init() {}
    }

    package struct Play: WireRequest {
        package typealias Result = ReceiverPlaybackState
        package static let method = "play"
        package let session: String
        package let url: String
        package let application: String?
        package init(session: String, url: String, application: String?) { (self.session, self.url, self.application) = (session, url, application) }
    }

    /// Applied seek first, then speed, then play or pause.
    package struct Control: WireRequest {
        package typealias Result = ReceiverPlaybackState
        package static let method = "control"
        package let session: String
        package var isPlaying: Bool?
        package var position: Double?
        package var speed: Double?
        package init(session: String, isPlaying: Bool? = nil, position: Double? = nil, speed: Double? = nil) {
            (self.session, self.isPlaying, self.position, self.speed) = (session, isPlaying, position, speed)
        }
    }

    package struct Stop: WireRequest {
        package typealias Result = Done
        package static let method = "stop"
        package let session: String
        package init(session: String) { self.session = session }
    }

    /// The receiver's volume, the answer to every volume request and its `volume.changed` event.
    package struct Volume: Codable, Sendable, Hashable {
        package let volume: Double
        package let muted: Bool
        package init(volume: Double, muted: Bool) { (self.volume, self.muted) = (volume, muted) }
    }

    package struct VolumeSet: WireRequest {
        package typealias Result = Volume
        package static let method = "volume.set"
        package let level: Double
        package init(level: Double) { self.level = level }
    }

    /// Each step is 0.05 of the range.
    package struct VolumeChange: WireRequest {
        package typealias Result = Volume
        package static let method = "volume.change"
        package let steps: Int
        package init(steps: Int) { self.steps = steps }
    }

    package struct VolumeMute: WireRequest {
        package typealias Result = Volume
        package static let method = "volume.mute"
        package let muted: Bool
        package init(muted: Bool) { self.muted = muted }
    }

    package struct AppSend: WireRequest {
        package typealias Result = Done
        package static let method = "app.send"
        package let application: String
        package let session: String?
        package let data: Base64Payload
        package init(application: String, session: String?, data: Base64Payload) { (self.application, self.session, self.data) = (application, session, data) }
    }

    /// Audio: `kind` audio, `codec` opus, `sampleRate`, `channels`; video: `kind` video, `codec`
    /// h264, `width`, `height`, `frameRate`.
    package struct StreamStart: WireRequest {
        package struct Opened: Codable, Sendable {
            package let port: UInt16
            package init(port: UInt16) { self.port = port }
        }
        package typealias Result = Opened
        package static let method = "stream.start"
        package let stream: String
        package let kind: String
        package let codec: String
        package var sampleRate: Int?
        package var channels: Int?
        package var width: Int?
        package var height: Int?
        package var frameRate: Int?

        package static func audio(_ stream: String, sampleRate: Int, channels: Int) -> StreamStart {
            var start = StreamStart(stream: stream, kind: "audio", codec: "opus")
            (start.sampleRate, start.channels) = (sampleRate, channels)
            return start
        }

        package static func video(_ stream: String, width: Int, height: Int, frameRate: Int) -> StreamStart {
            var start = StreamStart(stream: stream, kind: "video", codec: "h264")
            (start.width, start.height, start.frameRate) = (width, height, frameRate)
            return start
        }

        private init(stream: String, kind: String, codec: String) { (self.stream, self.kind, self.codec) = (stream, kind, codec) }
    }

    package struct StreamStop: WireRequest {
        package struct Summary: Codable, Sendable {
            package let packets: Int
            package let lost: Int
            package let frames: Int
            package init(packets: Int, lost: Int, frames: Int) { (self.packets, self.lost, self.frames) = (packets, lost, frames) }
        }
        package typealias Result = Summary
        package static let method = "stream.stop"
        package let stream: String
        package init(stream: String) { self.stream = stream }
    }
}

/// What a receiver tells its controllers (PROTOCOL.md §4).
package enum ReceiverEvent {
    package struct PlaybackState: WireNotification {
        package static let method = "playback.state"
        package let session: String
        package let state: ReceiverPlaybackState
        package init(session: String, state: ReceiverPlaybackState) { (self.session, self.state) = (session, state) }
    }

    /// The session is over: the media ended, failed (with `error`), or another session replaced it.
    package struct PlaybackEnded: WireNotification {
        package struct Failure: Codable, Sendable {
            package let code: Int
            package let message: String
            package init(code: Int, message: String) { (self.code, self.message) = (code, message) }
        }
        package static let method = "playback.ended"
        package let session: String
        package let state: ReceiverPlaybackState
        package let error: Failure?
        package init(session: String, state: ReceiverPlaybackState, error: Failure?) { (self.session, self.state, self.error) = (session, state, error) }
    }

    package struct VolumeChanged: WireNotification {
        package static let method = "volume.changed"
        package let volume: Double
        package let muted: Bool
        package init(_ volume: ReferenceRequest.Volume) { (self.volume, self.muted) = (volume.volume, volume.muted) }
    }

    package struct KeyframeRequest: WireNotification {
        package static let method = "stream.keyframeRequest"
        package let stream: String
        package init(stream: String) { self.stream = stream }
    }

    package struct AppData: WireNotification {
        package static let method = "app.data"
        package let application: String
        package let session: String?
        package let data: Base64Payload
        package init(application: String, session: String?, data: Base64Payload) { (self.application, self.session, self.data) = (application, session, data) }
    }
}

/// Who speaks in a reference-protocol `hello` (PROTOCOL.md §2): a controller names its stable
/// `controllerId`, a receiver its announced `id`.
package struct ControllerIdentity: Codable, Sendable {
    package let controllerId: String
    package init(controllerId: String) { self.controllerId = controllerId }
}

package struct ReceiverIdentity: Codable, Sendable {
    package let id: String
    package let model: String?
    package init(id: String, model: String?) { (self.id, self.model) = (id, model) }
}

extension ReceiverPlaybackState: Codable {
    private enum Keys: String, CodingKey { case state, isPlaying, position, speed, duration, title }

    /// Positions and durations to the millisecond: more digits say nothing a person hears.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(phase.rawValue, forKey: .state)
        try container.encode(isPlaying, forKey: .isPlaying)
        try container.encode((position * 1000).rounded() / 1000, forKey: .position)
        try container.encode(speed, forKey: .speed)
        try container.encodeIfPresent(duration.map { ($0 * 1000).rounded() / 1000 }, forKey: .duration)
        try container.encodeIfPresent(title, forKey: .title)
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        let name = try container.decode(String.self, forKey: .state)
        guard let phase = Phase(rawValue: name) else {
            throw WireDecodingError(path: container.codingPath + [Keys.state], "\"\(name)\" is not loading, playing, paused, ended or failed")
        }
        self.init(phase: phase, position: try container.decodeIfPresent(Double.self, forKey: .position) ?? 0,
                  duration: try container.decodeIfPresent(Double.self, forKey: .duration),
                  speed: try container.decodeIfPresent(Double.self, forKey: .speed) ?? 1, title: try container.decodeIfPresent(String.self, forKey: .title))
    }
}
