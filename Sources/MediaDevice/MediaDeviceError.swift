import MediaRouteIPC

/// An error a driver reports (activation, pairing, sessions, discovery), with a stable code that
/// travels to apps and operators and a sentence that says what happened.
public struct MediaDeviceError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Stable numbers on the wire (1000...1999, IPC/README.md §6).
    public enum Code: Int, Sendable, Hashable, CaseIterable {
        case connectionFailed = 1001
        case authorizationFailed = 1002
        case sessionFailed = 1003
        case discoveryFailed = 1004
        case deviceNotFound = 1005
        case unsupported = 1006
        case invalidDevice = 1007
        case timedOut = 1008
        case driverFailed = 1009
        case busy = 1010

        var defaultMessage: String {
            switch self {
            case .connectionFailed: "could not connect to the device"
            case .authorizationFailed: "the device did not accept the pairing code or password"
            case .sessionFailed: "the device could not start or continue the session"
            case .discoveryFailed: "device discovery failed"
            case .deviceNotFound: "no such device"
            case .unsupported: "the device does not support this"
            case .invalidDevice: "invalid device description"
            case .timedOut: "the device did not answer in time"
            case .driverFailed: "the driver stopped"
            case .busy: "the device is busy with another session"
            }
        }
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String? = nil) {
        self.code = code
        self.message = message ?? code.defaultMessage
    }

    public var description: String { "\(message) (code \(code.rawValue))" }

    public var rpcError: RPCError { RPCError(RPCError.Code(code.rawValue), message) }

    public init(rpcError: RPCError) {
        self.init(Code(rawValue: rpcError.code.rawValue) ?? .driverFailed, rpcError.message)
    }

    public var json: JSONValue { ["code": .integer(Int64(code.rawValue)), "message": .string(message)] }

    public init?(json: JSONValue?) {
        guard let object = json?.objectValue, let raw = object["code"]?.integerValue, let code = Code(rawValue: Int(raw)) else { return nil }
        self.init(code, object["message"]?.stringValue)
    }
}
