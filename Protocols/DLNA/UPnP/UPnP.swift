/// UPnP device architecture 2.0 names shared by SSDP, SOAP and GENA.
public enum UPnP {
    /// The SSDP multicast group and port (UDA 2.0 §1).
    public static let multicastGroup = "239.255.255.250"
    public static let ssdpPort: UInt16 = 1900
}
