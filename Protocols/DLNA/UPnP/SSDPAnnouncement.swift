import Foundation

/// What a device said of itself over SSDP: alive (a NOTIFY or an answer to our search), or gone.
public struct SSDPAnnouncement: Sendable, Hashable {
    public enum Kind: Sendable, Hashable {
        /// `NOTIFY` with `ssdp:alive`, or an answer to `M-SEARCH`: the device is there for `maxAge`.
        case alive(location: URL, maxAge: Int)
        /// `NOTIFY` with `ssdp:byebye`: it is leaving.
        case byebye
    }

    public var kind: Kind
    /// The device's unique name (`uuid:...`), the part of the USN before `::`.
    public var udn: String
    /// The notification or search target (`NT` or `ST`): a device or service type, or the UDN.
    public var target: String
    /// Who sent it (IP address as text).
    public var sender: String

    /// Devices that give no `max-age` are kept this long (UDA 2.0 asks for at least 1800 s).
    public static let defaultMaxAge = 1800

    /// Reads a NOTIFY or search answer; nil for searches (other control points) and for
    /// messages missing what SSDP requires of them (a USN, a LOCATION on alive).
    public init?(_ message: SSDPMessage, sender: String) {
        guard let usn = message["usn"], usn.hasPrefix("uuid:") else { return nil }
        udn = usn.firstRange(of: "::").map { String(usn[..<$0.lowerBound]) } ?? usn
        self.sender = sender
        let start = message.startLine.uppercased()
        if start.hasPrefix("NOTIFY") {
            guard let nt = message["nt"], let nts = message["nts"] else { return nil }
            target = nt
            switch nts.lowercased() {
            case "ssdp:alive": break
            case "ssdp:byebye":
                kind = .byebye
                return
            default: return nil  // ssdp:update and unknown kinds say nothing about presence
            }
        } else if start.hasPrefix("HTTP/1.") {
            guard start.contains(" 200"), let st = message["st"] else { return nil }
            target = st
        } else {
            return nil
        }
        guard let text = message["location"], let location = URL(string: text), location.scheme?.lowercased() == "http", location.host != nil else { return nil }
        kind = .alive(location: location, maxAge: Self.maxAge(message["cache-control"]))
    }

    init(kind: Kind, udn: String, target: String, sender: String) {
        self.kind = kind
        self.udn = udn
        self.target = target
        self.sender = sender
    }

    /// `max-age=N` from CACHE-CONTROL, bounded to a sane range.
    static func maxAge(_ cacheControl: String?) -> Int {
        guard let cacheControl else { return defaultMaxAge }
        for directive in cacheControl.split(separator: ",") {
            let parts = directive.split(separator: "=", maxSplits: 1).map { $0.trimmed.lowercased() }
            if parts.count == 2, parts[0] == "max-age", let seconds = Int(parts[1]) { return min(max(seconds, 1), 86_400) }
        }
        return defaultMaxAge
    }
}
