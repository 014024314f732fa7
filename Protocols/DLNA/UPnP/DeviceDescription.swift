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

    /// Reads the MediaRenderer in a description.
    public init(xml bytes: [UInt8], location: URL) throws(UPnPError) {
        try self.init(DeviceDescriptionDocument(xml: bytes, location: location))
    }

    /// Reads the rest of a description whose renderer was found.
    public init(_ document: DeviceDescriptionDocument) throws(UPnPError) {
        let (device, what) = (document.device, document.what)
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
        location = document.location
        icons = (device.child("iconList")?.children("icon") ?? []).compactMap { icon in
            guard let mime = icon.text("mimetype"), let path = icon.text("url"), let url = URL(string: path, relativeTo: document.base)?.absoluteURL else { return nil }
            return Icon(mimeType: mime, width: Int(icon.text("width") ?? "") ?? 0, height: Int(icon.text("height") ?? "") ?? 0, url: url)
        }
        avTransport = try document.service(UPnP.avTransport)
        renderingControl = try document.service(UPnP.renderingControl)
        connectionManager = try document.service(UPnP.connectionManager)
    }
}
