/// The method names of the driver <-> supervisor protocol (IPC/README.md, "Driver methods").
public enum DriverMethod {
    // Supervisor -> driver requests, one per `MediaDeviceExtension` entry point.
    public static let startDiscovery = "discovery.start"
    public static let stopDiscovery = "discovery.stop"
    public static let activate = "device.activate"
    public static let pair = "device.pair"
    public static let deactivate = "device.deactivate"
    public static let setVolume = "volume.set"
    public static let getVolume = "volume.get"
    public static let changeVolume = "volume.change"
    public static let mute = "volume.mute"
    public static let unmute = "volume.unmute"
    public static let startSession = "session.start"
    public static let stopSession = "session.stop"
    public static let dataToDevice = "session.dataToDevice"
    public static let setPlayback = "playback.set"
    /// `{"session", "stream", "format"}` with the ring's memfd and eventfd as descriptors 0 and 1.
    public static let startStream = "stream.start"
    public static let stopStream = "stream.stop"
    public static let ping = "rpc.ping"

    // Driver -> supervisor notifications, one per `MediaDeviceRoutingManager` report.
    public static let found = "device.found"
    public static let lost = "device.lost"
    public static let updated = "devices.updated"
    public static let discoveryFailed = "discovery.failed"
    public static let activated = "device.activated"
    public static let activationFailed = "device.activationFailed"
    public static let pairingRequested = "device.pairingRequested"
    public static let sessionStarted = "session.started"
    public static let sessionFailed = "session.failed"
    public static let volumeChanged = "volume.changed"
    public static let dataToApplication = "session.dataToApplication"
    public static let playbackState = "playback.state"
    public static let streamFailed = "stream.failed"
}
