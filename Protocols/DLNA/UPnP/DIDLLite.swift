/// DIDL-Lite metadata for `SetAVTransportURI` (ContentDirectory:1 §2.8.10): many renderers
/// refuse a URI without it, or show nothing but the URL.
public enum DIDLLite {
    /// One item: its title, the resource URL and the protocolInfo the renderer said it takes.
    public static func item(title: String, url: String, protocolInfo: ProtocolInfo, mimeType: String, duration: Double? = nil) -> String {
        let upnpClass = switch mimeType.split(separator: "/").first {
        case "video": "object.item.videoItem"
        case "image": "object.item.imageItem"
        default: "object.item.audioItem.musicTrack"
        }
        let info = ProtocolInfo(transport: "http-get", network: "*", contentFormat: mimeType, additionalInfo: protocolInfo.additionalInfo == "*" ? "*" : protocolInfo.additionalInfo)
        let durationAttribute = duration.map { " duration=\"\(UPnPTime.format($0))\"" } ?? ""
        return "<DIDL-Lite xmlns=\"urn:schemas-upnp-org:metadata-1-0/DIDL-Lite/\" xmlns:dc=\"http://purl.org/dc/elements/1.1/\" "
            + "xmlns:upnp=\"urn:schemas-upnp-org:metadata-1-0/upnp/\">"
            + "<item id=\"mediaroute-0\" parentID=\"-1\" restricted=\"1\"><dc:title>\(title.xmlEscaped)</dc:title>"
            + "<upnp:class>\(upnpClass)</upnp:class>"
            + "<res protocolInfo=\"\(info.description.xmlEscaped)\"\(durationAttribute)>\(url.xmlEscaped)</res></item></DIDL-Lite>"
    }
}
