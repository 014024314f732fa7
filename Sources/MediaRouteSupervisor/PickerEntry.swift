import MediaRouteWire

/// One line of the route picker: a physical device, possibly reachable through several protocols
/// (several drivers found a device of the same name), with the protocol to use by default.
public struct PickerEntry: Sendable, Hashable {
    /// One protocol's view of the device.
    public struct Route: Sendable, Hashable {
        public let protocolID: String
        public let protocolName: String
        public let device: MediaOutputDevice
    }

    public let name: String
    public let routes: [Route]
    /// The operator's choice if set and available, else the first protocol in manifest order.
    public let preferredProtocol: String

    /// The entry as seen by someone who handles only `protocols`: nil when none of its routes is one.
    func restricted(to protocols: Set<String>) -> PickerEntry? {
        let kept = routes.filter { protocols.contains($0.protocolID) }
        guard let first = kept.first else { return nil }
        let preferred = kept.contains { $0.protocolID == preferredProtocol } ? preferredProtocol : first.protocolID
        return PickerEntry(name: name, routes: kept, preferredProtocol: preferred)
    }

    /// The wire form (`picker.open`, `picker.changed`).
    package var line: PickerLine {
        PickerLine(name: name, preferredProtocol: preferredProtocol, routes: routes.map { .init(protocol: $0.protocolID, protocolName: $0.protocolName, device: $0.device) })
    }

    /// Entries are matched by display name, case- and space-insensitively.
    static func key(_ name: String) -> String {
        name.lowercased().split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }
}
