import Foundation

/// A device description parsed as far as finding its MediaRenderer and the base its URLs are
/// relative to: enough to locate one service, so that a control point can send GetProtocolInfo
/// before reading the rest (`DeviceDescription(_:)`) while the renderer works on the answer.
public struct DeviceDescriptionDocument: Sendable {
    /// The renderer's `<device>` element: the root device or one embedded in it (TVs often embed
    /// theirs in a device of their own type).
    let device: XMLNode
    let base: URL
    let location: URL
    /// "the device description at URL", for errors.
    let what: String

    public init(xml bytes: [UInt8], location: URL) throws(UPnPError) {
        what = "the device description at \(location.absoluteString)"
        let root: XMLNode
        do { root = try XMLNode.parse(bytes, what: what) } catch { throw UPnPError(.brokenDescription, error.description) }
        guard root.name == "root", let top = root.child("device") else {
            throw UPnPError(.brokenDescription, "\(what) has no <root><device> element")
        }
        guard let device = Self.renderer(in: top) else {
            throw UPnPError(.brokenDescription, "\(what) describes no MediaRenderer (device type \(top.text("deviceType") ?? "missing"))")
        }
        self.device = device
        self.location = location
        base = root.text("URLBase").flatMap(URL.init(string:)) ?? location
    }

    /// The renderer's service of `type`'s family (any version), with its URLs made absolute.
    public func service(_ type: String) throws(UPnPError) -> DeviceDescription.Service {
        let family = type.split(separator: ":").dropLast().joined(separator: ":")
        let services = device.child("serviceList")?.children("service") ?? []
        guard let node = services.first(where: { ($0.text("serviceType") ?? "").hasPrefix(family + ":") }) else {
            throw UPnPError(.brokenDescription, "\(what) lists no \(family.split(separator: ":").last ?? "") service")
        }
        guard let control = node.text("controlURL"), let controlURL = URL(string: control, relativeTo: base)?.absoluteURL,
              controlURL.scheme == "http", controlURL.host != nil else {
            throw UPnPError(.brokenDescription, "\(what) gives no usable controlURL for \(family.split(separator: ":").last ?? "")")
        }
        let eventURL = node.text("eventSubURL").flatMap { URL(string: $0, relativeTo: base)?.absoluteURL }
        return DeviceDescription.Service(type: node.text("serviceType") ?? type, controlURL: controlURL, eventURL: eventURL)
    }

    private static func renderer(in device: XMLNode) -> XMLNode? {
        if device.text("deviceType")?.hasPrefix("urn:schemas-upnp-org:device:MediaRenderer:") == true { return device }
        for embedded in device.child("deviceList")?.children("device") ?? [] {
            if let found = renderer(in: embedded) { return found }
        }
        return nil
    }
}

extension DeviceDescriptionDocument {
    /// The ConnectionManager a description names first, found by scanning its bytes rather than
    /// parsing them, so that GetProtocolInfo can go out before the description is parsed (~90 µs
    /// for gmediarender's, most of the time between its description and its answer). Only a
    /// guess: the caller checks it against `service(UPnP.connectionManager)` once parsed (an
    /// embedded device's service, a commented-out one, a prefixed element all fool a scan), and
    /// nil is given where a scan cannot tell (no `<controlURL>` before `</service>`).
    public static func connectionManagerGuess(in bytes: [UInt8], location: URL) -> DeviceDescription.Service? {
        bytes.withUnsafeBufferPointer { text -> DeviceDescription.Service? in
            func find(_ needle: StaticString, from start: Int) -> Int? {
                let pattern = UnsafeBufferPointer(start: needle.utf8Start, count: needle.utf8CodeUnitCount)
                guard text.count >= pattern.count, start <= text.count - pattern.count else { return nil }
                for index in start...(text.count - pattern.count) where text[index] == pattern[0] {
                    if memcmp(text.baseAddress! + index, pattern.baseAddress!, pattern.count) == 0 { return index }
                }
                return nil
            }
            func string(_ range: Range<Int>) -> String {
                String(decoding: UnsafeBufferPointer(rebasing: text[range]), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            }
            // Relative URLs are relative to `<URLBase>` where there is one (gmediarender's is last).
            var base = location
            if let open = find("<URLBase>", from: 0), let close = find("</URLBase>", from: open) {
                guard let given = URL(string: string(open + "<URLBase>".utf8.count..<close)) else { return nil }
                base = given
            }
            guard let type = find("urn:schemas-upnp-org:service:ConnectionManager:", from: 0),
                  let typeEnd = find("<", from: type),
                  let end = find("</service>", from: type),
                  let open = find("<controlURL>", from: type), open < end,
                  let close = find("</controlURL>", from: open), close < end else { return nil }
            let path = string(open + "<controlURL>".utf8.count..<close)
            guard !path.isEmpty, let url = URL(string: path, relativeTo: base)?.absoluteURL, url.scheme == "http", url.host != nil else { return nil }
            return DeviceDescription.Service(type: string(type..<typeEnd), controlURL: url, eventURL: nil)
        }
    }
}
