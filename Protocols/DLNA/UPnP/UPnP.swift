/// UPnP device architecture names shared by SSDP, SOAP and GENA.
public enum UPnP {
    /// The SSDP multicast group and port (UDA 2.0 §1).
    public static let multicastGroup = "239.255.255.250"
    public static let ssdpPort = 1900
    /// What we say we are in SSDP and HTTP (UDA asks for "OS/version UPnP/2.0 product/version").
    public static let userAgent = "Linux UPnP/2.0 MediaRoute/1.0"

    public static let mediaRendererTypes = ["urn:schemas-upnp-org:device:MediaRenderer:1", "urn:schemas-upnp-org:device:MediaRenderer:2"]
    public static let avTransport = "urn:schemas-upnp-org:service:AVTransport:1"
    public static let renderingControl = "urn:schemas-upnp-org:service:RenderingControl:1"
    public static let connectionManager = "urn:schemas-upnp-org:service:ConnectionManager:1"
}
