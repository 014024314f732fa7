/// Where the push endpoint listens: a numeric IPv4 address and a port (0: any free port, for
/// tests; the endpoint reports the port it got).
public struct PushListenAddress: Sendable, Hashable, CustomStringConvertible {
    public let host: String
    public let port: Int

    /// Loopback, on APNs's alternative port: only programs on this machine can push.
    public static let standard = PushListenAddress(host: "127.0.0.1", port: 2197)

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Reads `HOST:PORT`, e.g. `127.0.0.1:2197`; nil when it is not a numeric IPv4 address and a
    /// port from 0 to 65535.
    public init?(_ text: String) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port) else { return nil }
        let host = String(text[..<colon])
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4, parts.allSatisfy({ part in part.count <= 3 && UInt8(part) != nil }) else { return nil }
        self.init(host: host, port: port)
    }

    /// Whether only this machine can reach it (127.0.0.0/8).
    public var isLoopback: Bool { host.hasPrefix("127.") }

    public var description: String { "\(host):\(port)" }
}
