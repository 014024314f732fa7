import MediaDevice
import MediaRouteIPC

/// An activated device: the route apps and the CLI play to, until it is deactivated or its driver dies.
final class ActiveRoute: @unchecked Sendable {
    let session: MediaOutputSession
    let record: DriverRecord
    let device: MediaOutputDevice
    /// The connection that activated it (the CLI or an app), if it is still there.
    let owner: ObjectIdentifier?
    var application: String?
    var url: String?
    /// The driver's latest playback snapshot while a session plays.
    var playback: JSONObject?
    var volume: Double?
    var muted: Bool?

    init(session: MediaOutputSession, record: DriverRecord, device: MediaOutputDevice, owner: ObjectIdentifier?) {
        self.session = session
        self.record = record
        self.device = device
        self.owner = owner
    }

    var json: JSONValue {
        var object: JSONObject = ["session": .string(session.id), "protocol": .string(record.id),
                                  "protocolName": .string(record.manifest.displayName), "device": device.json]
        if let application { object["application"] = .string(application) }
        if let url { object["url"] = .string(url) }
        if let playback { object["playback"] = .object(playback) }
        if let volume { object["volume"] = .double(volume) }
        if let muted { object["muted"] = .bool(muted) }
        return .object(object)
    }
}

/// What a driver reports about one activation or session, delivered in order to whoever waits.
enum SessionEvent: Sendable {
    case activated
    case activationFailed(MediaDeviceError)
    case pairingRequested(reason: String, method: MediaOutputDevice.AuthorizationMethod)
    case started(application: String?, state: JSONObject)
    case sessionFailed(MediaDeviceError)
    /// The driver died or the wait timed out.
    case aborted(MediaDeviceError)
}

/// A mailbox for one session's events: events that arrive before anyone waits are kept.
/// Used on the supervisor's executor only.
final class SessionMailbox: @unchecked Sendable {
    /// The driver whose reports this mailbox receives; its death aborts the wait.
    let record: DriverRecord
    init(record: DriverRecord) { self.record = record }
    private var queued: [SessionEvent] = []
    private var waiter: CheckedContinuation<SessionEvent, Never>?

    func deliver(_ event: SessionEvent) {
        if let waiter {
            self.waiter = nil
            waiter.resume(returning: event)
        } else {
            queued.append(event)
        }
    }

    func next() async -> SessionEvent {
        if !queued.isEmpty { return queued.removeFirst() }
        return await withCheckedContinuation { waiter = $0 }
    }
}

/// The pairing question put to whoever started an activation.
public struct PairingRequest: Sendable {
    public let deviceName: String
    public let protocolName: String
    public let reason: String
    public let method: MediaOutputDevice.AuthorizationMethod
}
