import Foundation

/// A renderer's device description (UDA 2.0 §2.3): who it is, and where its services are.
/// Only renderers with everything a control point needs are made into one; anything less is
/// a `brokenDescription` error naming what is missing, so it is logged, never half-listed.
public struct DeviceDescription: Sendable, Hashable {
    public struct Service: Sendable, Hashable {
        public var type: String
        public var controlURL: URL
        public var eventURL: URL?
    }

    public struct Icon: Sendable, Hashable {
        public var mimeType: String
        public var width: Int
        public var height: Int
        public var url: URL
    }

    public var udn: String
    public var deviceType: String
    public var friendlyName: String
    public var manufacturer: String?
    public var modelName: String?
    public var icons: [Icon]
    public var avTransport: Service
    public var renderingControl: Service
    public var connectionManager: Service
    /// Where the description was fetched from.
    public var location: URL

    /// Reads the MediaRenderer in a description: the root device or one embedded in it (TVs
    /// often embed theirs in a device of their own type).
    public init(xml bytes: [UInt8], location: URL) throws(UPnPError) {
        let what = "the device description at \(location.absoluteString)"
        let root: XMLNode
        do { root = try XMLNode.parse(bytes, what: what) } catch { throw UPnPError(.brokenDescription, error.description) }
        guard root.name == "root", let top = root.child("device") else {
            throw UPnPError(.brokenDescription, "\(what) has no <root><device> element")
        }
        let base = root.text("URLBase").flatMap(URL.init(string:)) ?? location
        guard let device = Self.renderer(in: top) else {
            throw UPnPError(.brokenDescription, "\(what) describes no MediaRenderer (device type \(top.text("deviceType") ?? "missing"))")
        }
        func required(_ name: String) throws(UPnPError) -> String {
            guard let value = device.text(name) else { throw UPnPError(.brokenDescription, "\(what) has no <\(name)>") }
            return value
        }
        udn = try required("UDN")
        guard udn.hasPrefix("uuid:") else { throw UPnPError(.brokenDescription, "\(what) has a UDN that is not a uuid: \"\(udn)\"") }
        deviceType = try required("deviceType")
        friendlyName = try required("friendlyName")
        manufacturer = device.text("manufacturer")
        modelName = device.text("modelName")
        self.location = location
        icons = (device.child("iconList")?.children("icon") ?? []).compactMap { icon in
            guard let mime = icon.text("mimetype"), let path = icon.text("url"), let url = URL(string: path, relativeTo: base)?.absoluteURL else { return nil }
            return Icon(mimeType: mime, width: Int(icon.text("width") ?? "") ?? 0, height: Int(icon.text("height") ?? "") ?? 0, url: url)
        }
        let services = device.child("serviceList")?.children("service") ?? []
        func service(_ type: String) throws(UPnPError) -> Service {
            let family = type.split(separator: ":").dropLast().joined(separator: ":")
            guard let node = services.first(where: { ($0.text("serviceType") ?? "").hasPrefix(family + ":") }) else {
                throw UPnPError(.brokenDescription, "\(what) lists no \(family.split(separator: ":").last ?? "") service")
            }
            guard let control = node.text("controlURL"), let controlURL = URL(string: control, relativeTo: base)?.absoluteURL,
                  controlURL.scheme == "http", controlURL.host != nil else {
                throw UPnPError(.brokenDescription, "\(what) gives no usable controlURL for \(family.split(separator: ":").last ?? "")")
            }
            let eventURL = node.text("eventSubURL").flatMap { URL(string: $0, relativeTo: base)?.absoluteURL }
            return Service(type: node.text("serviceType") ?? type, controlURL: controlURL, eventURL: eventURL)
        }
        avTransport = try service(UPnP.avTransport)
        renderingControl = try service(UPnP.renderingControl)
        connectionManager = try service(UPnP.connectionManager)
    }

    private static func renderer(in device: XMLNode) -> XMLNode? {
        if device.text("deviceType")?.hasPrefix("urn:schemas-upnp-org:device:MediaRenderer:") == true { return device }
        for embedded in device.child("deviceList")?.children("device") ?? [] {
            if let found = renderer(in: embedded) { return found }
        }
        return nil
    }
}
