import CAvahi

/// Something Avahi could not do, in a sentence (with Avahi's own reason).
public struct AvahiError: Error, Sendable, Hashable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    init(_ what: String, code: Int32) { message = "\(what): \(String(cString: avahi_strerror(code)))" }
    public var description: String { message }
}

/// Every interface, as Avahi says it.
let anyInterface = AvahiIfIndex(AVAHI_IF_UNSPEC)
/// Browsing, resolving and publishing are IPv4 only: what the reference protocol's devices announce.
let ipv4 = AvahiProtocol(AVAHI_PROTO_INET)
