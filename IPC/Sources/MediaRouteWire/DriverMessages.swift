import MediaRouteIPC

/// What the supervisor asks a driver (IPC/README.md §11.2): one type per request, each answered
/// as soon as the driver has taken it in; outcomes that take time come back as `FromDriver` reports.
package enum ToDriver {
    package struct StartDiscovery: WireRequest {
        package typealias Result = NoResult
        package static let method = "discovery.start"
        package init() {}
    }

    package struct StopDiscovery: WireRequest {
        package typealias Result = NoResult
        package static let method = "discovery.stop"
        package init() {}
    }

    package struct Activate: WireRequest {
        package typealias Result = NoResult
        package static let method = "device.activate"
        package let device: MediaOutputDevice
        package let session: String
        /// What the activation is for: the device's capabilities the system will use.
        package let features: MediaOutputDevice.Capabilities
        package init(device: MediaOutputDevice, session: String, features: MediaOutputDevice.Capabilities) {
            (self.device, self.session, self.features) = (device, session, features)
        }
    }

    package struct Pair: WireRequest {
        package typealias Result = NoResult
        package static let method = "device.pair"
        package let device: MediaOutputDevice
        package let session: String
        /// nil: the person cancelled (sent as `null`, never left out).
        package let code: String?
        package init(device: MediaOutputDevice, session: String, code: String?) { (self.device, self.session, self.code) = (device, session, code) }

        private enum Keys: String, CodingKey { case device, session, code }
        package func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(device, forKey: .device)
            try container.encode(session, forKey: .session)
            if let code { try container.encode(code, forKey: .code) } else { try container.encodeNil(forKey: .code) }
        }
    }

    package struct Deactivate: WireRequest {
        package typealias Result = NoResult
        package static let method = "device.deactivate"
        package let device: MediaOutputDevice
        package let session: String
        package init(device: MediaOutputDevice, session: String) { (self.device, self.session) = (device, session) }
    }

    package struct SetVolume: WireRequest {
        package typealias Result = NoResult
        package static let method = "volume.set"
        package let device: MediaOutputDevice
        package let volume: Double
        package init(device: MediaOutputDevice, volume: Double) { (self.device, self.volume) = (device, volume) }
    }

    package struct GetVolume: WireRequest {
        package struct Reading: Codable, Sendable {
            package let volume: Float
            package let muted: Bool
            package init(volume: Float, muted: Bool) { (self.volume, self.muted) = (volume, muted) }
        }
        package typealias Result = Reading
        package static let method = "volume.get"
        package let device: MediaOutputDevice
        package init(device: MediaOutputDevice) { self.device = device }
    }

    package struct ChangeVolume: WireRequest {
        package typealias Result = NoResult
        package static let method = "volume.change"
        package let device: MediaOutputDevice
        /// Steps, -100...100; what a step is belongs to the device (§11.2).
        package let by: Int
        package init(device: MediaOutputDevice, by steps: Int) { (self.device, self.by) = (device, steps) }
    }

    package struct Mute: WireRequest {
        package typealias Result = NoResult
        package static let method = "volume.mute"
        package let device: MediaOutputDevice
        package init(device: MediaOutputDevice) { self.device = device }
    }

    package struct Unmute: WireRequest {
        package typealias Result = NoResult
        package static let method = "volume.unmute"
        package let device: MediaOutputDevice
        package init(device: MediaOutputDevice) { self.device = device }
    }

    package struct StartSession: WireRequest {
        package typealias Result = NoResult
        package static let method = "session.start"
        package let session: String
        package let url: String
        package let application: String?
        package init(session: String, url: String, application: String?) { (self.session, self.url, self.application) = (session, url, application) }
    }

    package struct StopSession: WireRequest {
        package typealias Result = NoResult
        package static let method = "session.stop"
        package let session: String
        package init(session: String) { self.session = session }
    }

    package struct DataToDevice: WireRequest {
        package typealias Result = NoResult
        package static let method = "session.dataToDevice"
        package let session: String
        package let application: String
        package let data: Base64Payload
        package init(session: String, application: String, data: Base64Payload) { (self.session, self.application, self.data) = (session, application, data) }
    }

    package struct SetPlayback: WireRequest {
        package typealias Result = PlaybackStatus
        package static let method = "playback.set"
        package let session: String
        package let changes: PlaybackChanges
        package init(session: String, changes: PlaybackChanges) { (self.session, self.changes) = (session, changes) }
    }

    /// Sent with the ring's memfd and eventfd as descriptors 0 and 1.
    package struct StartStream: WireRequest {
        /// The driver's answer: how long from a record leaving the ring to its sound leaving the
        /// device, when the driver knows (a Bluetooth device reports its own share). `null` and
        /// `{}` say nothing.
        package struct Started: Codable, Sendable, Equatable {
            package let latency: Double?
            package init(latency: Double?) { self.latency = latency }
            private enum Keys: String, CodingKey { case latency }
            package init(from decoder: any Decoder) throws {
                if try decoder.singleValueContainer().decodeNil() {
                    latency = nil
                    return
                }
                let latency = try decoder.container(keyedBy: Keys.self).decodeIfPresent(Double.self, forKey: .latency)
                if let latency, !(0...60).contains(latency) {
                    throw DecodingError.dataCorrupted(.init(codingPath: [Keys.latency], debugDescription: "a latency is 0 to 60 seconds, not \(latency)"))
                }
                self.latency = latency
            }
            package func encode(to encoder: any Encoder) throws {
                var object = encoder.container(keyedBy: Keys.self)
                try object.encodeIfPresent(latency, forKey: .latency)
            }
        }
        package typealias Result = Started
        package static let method = "stream.start"
        package let session: String
        package let stream: String
        package let format: SampleFormat
        package init(session: String, stream: String, format: SampleFormat) { (self.session, self.stream, self.format) = (session, stream, format) }
    }

    package struct StopStream: WireRequest {
        package typealias Result = NoResult
        package static let method = "stream.stop"
        package let session: String
        package let stream: String
        package init(session: String, stream: String) { (self.session, self.stream) = (session, stream) }
    }

    /// The heartbeat; answered `{}`.
    package struct Ping: WireRequest {
        package struct Pong: Codable, Sendable { package init() {} }
        package typealias Result = Pong
        package static let method = "rpc.ping"
        package init() {}
    }
}

extension MediaOutputDevice.Capabilities: Codable {
    /// On the wire: the names, e.g. `["urlPlayback", "realtimeAudioStreaming"]`.
    public init(from decoder: any Decoder) throws {
        let names = try decoder.singleValueContainer().decode([String].self)
        guard let value = Self(names: names) else {
            throw WireDecodingError(path: decoder.codingPath, "lists an unknown capability; known: urlPlayback, realtimeAudioStreaming, realtimeVideoStreaming")
        }
        self = value
    }

    public func encode(to encoder: any Encoder) throws {
        var single = encoder.singleValueContainer()
        try single.encode(names)
    }
}
