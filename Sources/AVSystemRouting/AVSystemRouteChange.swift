import Foundation
import MediaDevice

/// Why the current route changed (the remote-route counterpart of AVAudioSession.RouteChangeReason).
public enum AVSystemRouteChangeReason: String, Sendable, Hashable {
    case unknown
    /// A device was activated: it is now an output of the current route.
    case newDeviceAvailable
    /// A device went away on its own (lost on the network, disconnected, its driver stopped).
    /// Its playback was paused; the privacy rule says never to move it to another output by itself.
    case oldDeviceUnavailable
    /// Someone ended the route on purpose: the person, the operator, or the app that activated it.
    case override
    /// An output's description changed (its name, capabilities or volume).
    case routeConfigurationChange
}

/// The kind of an output, derived from the device's type, for choosing what to do on a change
/// (pause when private headphones go away, for instance).
public struct AVSystemRoutePort: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    public static let tv = AVSystemRoutePort(rawValue: "tv")
    public static let speaker = AVSystemRoutePort(rawValue: "speaker")
    public static let headphones = AVSystemRoutePort(rawValue: "headphones")
    public static let bluetoothA2DP = AVSystemRoutePort(rawValue: "bluetoothA2DP")
    public static let carAudio = AVSystemRoutePort(rawValue: "carAudio")
    public static let receiver = AVSystemRoutePort(rawValue: "receiver")
    public static let setTopBox = AVSystemRoutePort(rawValue: "setTopBox")
    public static let computer = AVSystemRoutePort(rawValue: "computer")
    public static let unknown = AVSystemRoutePort(rawValue: "unknown")

    public init(_ deviceType: MediaOutputDevice.DeviceType) {
        switch deviceType {
        case .tv: self = .tv
        case .speaker: self = .speaker
        case .headphones: self = .headphones
        case .bluetoothSpeaker: self = .bluetoothA2DP
        case .car: self = .carAudio
        case .receiver: self = .receiver
        case .setTopBox: self = .setTopBox
        case .computer: self = .computer
        case .unknown: self = .unknown
        }
    }

    /// Outputs only the person hears; losing one must pause playback rather than let it be heard by others.
    public var isPrivate: Bool { self == .headphones }
}

/// One output of a route: a remote device.
public struct AVSystemRoutePortDescription: Sendable, Hashable {
    public let portType: AVSystemRoutePort
    public let portName: String
    /// The device's stable id.
    public let uid: String
    public let protocolType: UTType
}

/// The outputs in use at one moment: every active remote route of the app's protocols.
public struct AVSystemRouteDescription: Sendable, Hashable {
    public let outputs: [AVSystemRoutePortDescription]
    public init(outputs: [AVSystemRoutePortDescription]) { self.outputs = outputs }
}

/// A change of the current route, with the route before it (which, when a device went away, is
/// the only place that device still appears).
public struct AVSystemRouteChange: Sendable, Hashable {
    public let reason: AVSystemRouteChangeReason
    public let previousRoute: AVSystemRouteDescription
    public let currentRoute: AVSystemRouteDescription
    /// What happened, in a sentence (for logs and the person).
    public let message: String
}

extension AVSystemRouteController {
    /// Posted on `NotificationCenter.default`, on the main actor, for every route change; the
    /// userInfo holds the reason and previous route under the keys below.
    public static let routeChangeNotification = Notification.Name("AVSystemRouteControllerRouteChangeNotification")
    /// userInfo key: the `AVSystemRouteChangeReason`'s raw value (a String).
    public static let routeChangeReasonKey = "AVSystemRouteChangeReasonKey"
    /// userInfo key: the `AVSystemRouteDescription` before the change.
    public static let routeChangePreviousRouteKey = "AVSystemRouteChangePreviousRouteKey"
}
