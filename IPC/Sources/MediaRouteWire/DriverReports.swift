import MediaRouteIPC

/// What a driver tells the supervisor (IPC/README.md §11.2): notifications, one type each.
/// Requests name a device by its whole description; these name it by its `id`.
package enum FromDriver {
    package struct DeviceFound: WireNotification {
        package static let method = "device.found"
        package let device: ReportedDevice
        package init(device: MediaOutputDevice) { self.device = ReportedDevice(device) }
    }

    package struct DeviceLost: WireNotification {
        package static let method = "device.lost"
        package let id: String
        package init(id: String) { self.id = id }
    }

    package struct DevicesUpdated: WireNotification {
        package static let method = "devices.updated"
        package let devices: [ReportedDevice]
        package init(devices: [MediaOutputDevice]) { self.devices = devices.map(ReportedDevice.init) }
    }

    package struct DiscoveryFailed: WireNotification {
        package static let method = "discovery.failed"
        package let error: MediaDeviceError
        package init(error: MediaDeviceError) { self.error = error }
    }

    package struct Activated: WireNotification {
        package static let method = "device.activated"
        package let device: String
        package let session: String
        package init(device: String, session: String) { (self.device, self.session) = (device, session) }
    }

    package struct ActivationFailed: WireNotification {
        package static let method = "device.activationFailed"
        package let device: String
        package let session: String
        package let error: MediaDeviceError
        package init(device: String, session: String, error: MediaDeviceError) { (self.device, self.session, self.error) = (device, session, error) }
    }

    /// The device dropped an activation the driver had reported (its connection closed, it
    /// rebooted, it was taken by another controller) while it may still be discoverable.
    package struct Deactivated: WireNotification {
        package static let method = "device.deactivated"
        package let device: String
        package let session: String
        package let error: MediaDeviceError
        package init(device: String, session: String, error: MediaDeviceError) { (self.device, self.session, self.error) = (device, session, error) }
    }

    package struct PairingRequested: WireNotification {
        package static let method = "device.pairingRequested"
        package let device: String
        package let session: String
        /// A sentence for the person, shown once, with the prompt (e.g. "Enter the code the TV shows.").
        package let reason: String?
        package let authorizationMethod: MediaOutputDevice.AuthorizationMethod
        package init(device: String, session: String, reason: String?, authorizationMethod: MediaOutputDevice.AuthorizationMethod) {
            (self.device, self.session, self.reason, self.authorizationMethod) = (device, session, reason, authorizationMethod)
        }
    }

    package struct SessionStarted: WireNotification {
        package static let method = "session.started"
        package let session: String
        package let application: String?
        package let state: PlaybackStatus
        package init(session: String, application: String?, state: PlaybackStatus) { (self.session, self.application, self.state) = (session, application, state) }
    }

    package struct SessionFailed: WireNotification {
        package static let method = "session.failed"
        package let session: String
        package let error: MediaDeviceError
        package init(session: String, error: MediaDeviceError) { (self.session, self.error) = (session, error) }
    }

    package struct PlaybackState: WireNotification {
        package static let method = "playback.state"
        package let session: String
        package let state: PlaybackStatus
        package init(session: String, state: PlaybackStatus) { (self.session, self.state) = (session, state) }
    }

    package struct VolumeChanged: WireNotification {
        package static let method = "volume.changed"
        package let device: String
        package let volume: Float?
        package let muted: Bool?
        package init(device: String, volume: Float?, muted: Bool?) { (self.device, self.volume, self.muted) = (device, volume, muted) }
    }

    package struct DataToApplication: WireNotification {
        package static let method = "session.dataToApplication"
        package let session: String
        package let application: String
        package let data: Base64Payload
        package init(session: String, application: String, data: Base64Payload) { (self.session, self.application, self.data) = (session, application, data) }
    }

    /// The device's own controls, for the app whose sample streams play there (§11.2).
    package struct RemoteCommand: WireNotification {
        package static let method = "session.remoteCommand"
        package let session: String
        package let command: MediaRemoteCommand
        package init(session: String, command: MediaRemoteCommand) { (self.session, self.command) = (session, command) }
    }

    package struct StreamFailed: WireNotification {
        package static let method = "stream.failed"
        package let session: String?
        package let stream: String
        package let error: MediaDeviceError
        package init(session: String?, stream: String, error: MediaDeviceError) { (self.session, self.stream, self.error) = (session, stream, error) }
    }
}

/// A device as a driver reports it, with the protocol it claims if it names one: a device of
/// another protocol than its driver's is a lie (§11.1).
package struct ReportedDevice: Codable, Sendable {
    package let device: MediaOutputDevice
    package let claimedProtocol: String?

    package init(_ device: MediaOutputDevice) { (self.device, self.claimedProtocol) = (device, nil) }

    private enum Keys: String, CodingKey { case `protocol` }

    package init(from decoder: any Decoder) throws {
        device = try MediaOutputDevice(from: decoder)
        claimedProtocol = try decoder.container(keyedBy: Keys.self).decodeIfPresent(String.self, forKey: .protocol)
    }

    package func encode(to encoder: any Encoder) throws { try device.encode(to: encoder) }
}

/// Who a driver says it is in `hello.identity` (§11.2).
package struct DriverIdentity: Codable, Sendable {
    package let name: String
    package let `protocol`: String
    package let pid: Int32?
    /// Sessions on more than one device at once (per driver); false: a second activation is refused.
    package let supportsSimultaneousSessions: Bool?
    /// It takes sample streams (its type conforms to RealtimeSampleHandling).
    package let realtimeSampleHandling: Bool?

    package init(name: String, protocol: String, pid: Int32, supportsSimultaneousSessions: Bool, realtimeSampleHandling: Bool) {
        self.name = name
        self.protocol = `protocol`
        self.pid = pid
        self.supportsSimultaneousSessions = supportsSimultaneousSessions
        self.realtimeSampleHandling = realtimeSampleHandling
    }

    package var object: JSONObject { WireEncoder.encode(self).objectValue ?? [:] }

    package init(_ identity: JSONObject) throws(RPCError) {
        do { self = try WireDecoder.decode(Self.self, from: .object(identity)) } catch {
            throw RPCError(.invalidParams, "hello: identity: \(error)")
        }
    }
}
