import AvahiDiscovery

/// A device heard on the network by the protocol itself (DNS-SD through Avahi, SSDP), with the
/// driver that should list it.
struct DeviceSighting: Sendable {
    let driver: String
    /// How and where it was heard: `DNS-SD _raop._tcp "MAC@Name" at ADDRESS:PORT`.
    let how: String
    /// Its address, to find what its driver said of it by address.
    let address: String

    /// What a person calls the device: an AirPlay instance is `MAC@Name`.
    static func name(of service: ResolvedService, type: String) -> String {
        type == "_raop._tcp" ? String(service.name.split(separator: "@", maxSplits: 1).last ?? Substring(service.name)) : service.name
    }

    /// Names compared as the picker compares them: case and spaces ignored.
    static func same(_ a: String, _ b: String) -> Bool { normal(a) == normal(b) }
    static func mentions(_ text: String, _ name: String) -> Bool { normal(text).contains(normal(name)) }
    private static func normal(_ text: String) -> String { text.lowercased().filter { !$0.isWhitespace } }
}
