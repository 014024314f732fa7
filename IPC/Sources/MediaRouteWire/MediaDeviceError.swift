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

        package var defaultMessage: String {
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

    package var rpcError: RPCError { RPCError(RPCError.Code(code.rawValue), message) }

    package init(rpcError: RPCError) {
        self.init(Code(rawValue: rpcError.code.rawValue) ?? .driverFailed, rpcError.message)
    }
}

extension MediaDeviceError: Codable {
    private enum Keys: String, CodingKey { case code, message }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(code.rawValue, forKey: .code)
        try container.encode(message, forKey: .message)
    }

    /// A device error from the wire: a code of §11.1's table and, optionally, a sentence.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        let raw = try container.decode(Int.self, forKey: .code)
        guard let code = Code(rawValue: raw) else {
            throw WireDecodingError(path: container.codingPath + [Keys.code], "\(raw) is not a device error code (1001 to 1010)")
        }
        self.init(code, try container.decodeIfPresent(String.self, forKey: .message))
    }
}
