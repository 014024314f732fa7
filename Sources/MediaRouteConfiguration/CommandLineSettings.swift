import Logging
import MediaRouteSupervisor

/// What mediarouted's flags say; each given one wins over the configuration file. Checked for
/// syntax by the command itself.
public struct CommandLineSettings: Sendable, Hashable {
    public var driversDirectories: [String] = []
    public var socket: String?
    public var stateDirectory: String?
    public var logLevel: Logger.Level?
    public var mprisBus: String?
    public var noMPRIS = false
    public var pushListen: PushListenAddress?
    public var noPush = false
    public var connectionsPerUser: Int?
    public var reconnectWindow: Duration?

    public init() {}
}
