import MediaRouteIPC

/// An active route as the supervisor shows it to the CLI and apps (IPC/README.md §11.3).
package struct RouteDescription: Codable, Sendable, Hashable {
    /// A sample stream open on the route.
    package struct OpenStream: Codable, Sendable, Hashable {
        package let stream: String
        package let format: SampleFormat
        package init(stream: String, format: SampleFormat) { (self.stream, self.format) = (stream, format) }
    }

    package let session: String
    package let `protocol`: String
    package let protocolName: String
    package let device: MediaOutputDevice
    package let simultaneousSessions: Bool
    /// A session plays (or starts) on it.
    package let busy: Bool
    /// For a child route: the route it was opened beside.
    package let parent: String?
    package let application: String?
    package let url: String?
    package let playback: SessionPlayback?
    package let volume: Float?
    package let muted: Bool?
    package let streams: [OpenStream]?
    /// Set while the device is away and the supervisor waits for it to come back: until when (seconds since 1970, UTC).
    package let reconnectingUntil: Double?

    package init(session: String, protocol: String, protocolName: String, device: MediaOutputDevice, simultaneousSessions: Bool, busy: Bool,
                 parent: String?, application: String?, url: String?, playback: SessionPlayback?, volume: Float?, muted: Bool?, streams: [OpenStream]?,
                 reconnectingUntil: Double? = nil) {
        self.session = session
        self.protocol = `protocol`
        self.protocolName = protocolName
        self.device = device
        self.simultaneousSessions = simultaneousSessions
        self.busy = busy
        self.parent = parent
        self.application = application
        self.url = url
        self.playback = playback
        self.volume = volume
        self.muted = muted
        self.streams = streams
        self.reconnectingUntil = reconnectingUntil
    }
}

/// A session's playback state as the supervisor stored it: the driver's state and its `revision`,
/// which grows with every state stored, so a client drops a state older than one it has shown.
package struct SessionPlayback: Codable, Sendable, Hashable {
    package var status: PlaybackStatus
    package var revision: Int64

    package init(status: PlaybackStatus, revision: Int64) { (self.status, self.revision) = (status, revision) }

    private enum Keys: String, CodingKey { case revision }

    package init(from decoder: any Decoder) throws {
        status = try PlaybackStatus(from: decoder)
        revision = try decoder.container(keyedBy: Keys.self).decodeIfPresent(Int64.self, forKey: .revision) ?? 0
    }

    package func encode(to encoder: any Encoder) throws {
        try status.encode(to: encoder)
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(revision, forKey: .revision)
    }
}

/// One line of the route picker (§11.3): a device by name, and each protocol that reaches it.
package struct PickerLine: Codable, Sendable, Hashable {
    package struct Route: Codable, Sendable, Hashable {
        package let `protocol`: String
        package let protocolName: String
        package let device: MediaOutputDevice
        package init(protocol: String, protocolName: String, device: MediaOutputDevice) {
            (self.protocol, self.protocolName, self.device) = (`protocol`, protocolName, device)
        }
    }

    package let name: String
    package let preferredProtocol: String
    package let routes: [Route]
    package init(name: String, preferredProtocol: String, routes: [Route]) { (self.name, self.preferredProtocol, self.routes) = (name, preferredProtocol, routes) }
}

/// One driver as `drivers` and `status` list it (§11.3).
package struct DriverReport: Codable, Sendable, Hashable {
    package let `protocol`: String
    package let displayName: String
    package let manifest: String
    /// `stopped`, `starting`, `running`, `restarting in N ms`, `failed: …`, `disabled` or `refused: …`.
    package let state: String
    package let pid: Int32?
    package let restarts: Int
    package let uptimeSeconds: Int?
    /// How it last ended, in words: "exited when idle", "restarted by the operator", "killed by signal 9 (hung: ...)".
    package let lastExit: String?
    package let devices: Int
    package let lastDiscoveryError: String?

    package init(protocol: String, displayName: String, manifest: String, state: String, pid: Int32?, restarts: Int, uptimeSeconds: Int?,
                 lastExit: String?, devices: Int, lastDiscoveryError: String?) {
        self.protocol = `protocol`
        self.displayName = displayName
        self.manifest = manifest
        self.state = state
        self.pid = pid
        self.restarts = restarts
        self.uptimeSeconds = uptimeSeconds
        self.lastExit = lastExit
        self.devices = devices
        self.lastDiscoveryError = lastDiscoveryError
    }
}
