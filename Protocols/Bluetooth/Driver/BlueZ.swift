import DBus

/// BlueZ's names on the bus (its `doc/org.bluez.*.rst`): what the driver calls and what calls it.
enum BlueZ {
    static let service = "org.bluez"
    static let root: DBusObjectPath = "/"
    static let objectManager = "org.freedesktop.DBus.ObjectManager"
    static let properties = "org.freedesktop.DBus.Properties"

    static let adapter = "org.bluez.Adapter1"
    static let device = "org.bluez.Device1"
    static let agentManager = "org.bluez.AgentManager1"
    static let agent = "org.bluez.Agent1"
    static let media = "org.bluez.Media1"
    static let mediaEndpoint = "org.bluez.MediaEndpoint1"
    static let mediaTransport = "org.bluez.MediaTransport1"
    static let mediaPlayer = "org.bluez.MediaPlayer1"

    /// Profile UUIDs (Bluetooth Assigned Numbers): we are an A2DP source; we list A2DP sinks.
    static let audioSourceUUID = "0000110a-0000-1000-8000-00805f9b34fb"
    static let audioSinkUUID = "0000110b-0000-1000-8000-00805f9b34fb"
    /// A2DP codec id of SBC, the one codec every A2DP device takes.
    static let sbcCodec: UInt8 = 0

    /// Where our own objects live on the bus.
    static let agentPath: DBusObjectPath = "/org/mediaroute/bluetooth/agent"
    static let endpointPath: DBusObjectPath = "/org/mediaroute/bluetooth/sbc_source"
    static let playerPath: DBusObjectPath = "/org/mediaroute/bluetooth/player"

    /// Error names BlueZ answers with, and the ones an agent answers BlueZ with.
    enum Error {
        static let authenticationFailed = "org.bluez.Error.AuthenticationFailed"
        static let authenticationCanceled = "org.bluez.Error.AuthenticationCanceled"
        static let authenticationRejected = "org.bluez.Error.AuthenticationRejected"
        static let authenticationTimeout = "org.bluez.Error.AuthenticationTimeout"
        static let alreadyExists = "org.bluez.Error.AlreadyExists"
        static let inProgress = "org.bluez.Error.InProgress"
        static let notReady = "org.bluez.Error.NotReady"
        static let rejected = "org.bluez.Error.Rejected"
        static let canceled = "org.bluez.Error.Canceled"
    }
}
