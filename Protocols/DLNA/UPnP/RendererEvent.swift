/// What a renderer's events say changed (AVTransport's and RenderingControl's `LastChange`,
/// UPnP AV Architecture §2.3.1), for instance 0. Absent means not mentioned in this event.
public struct RendererEvent: Sendable, Hashable {
    public var transportState: String?
    public var transportStatus: String?
    public var currentURI: String?
    public var duration: Double?
    public var position: Double?
    /// Master volume, 0–100 in the renderer's scale.
    public var volume: Int?
    public var muted: Bool?

    public init() {}

    public var isEmpty: Bool { self == RendererEvent() }

    /// Reads a GENA NOTIFY body (`<propertyset>`): the LastChange document it carries (escaped
    /// inside), and any state variable evented on its own.
    public init(propertySet body: [UInt8], from sender: String) throws(XMLError) {
        self.init()
        let set = try XMLNode.parse(body, what: "the event from \(sender)")
        guard set.name == "propertyset" else { throw XMLError("the event from \(sender) is a <\(set.name)>, not a <propertyset>") }
        for property in set.children("property") {
            for variable in property.children {
                if variable.name == "LastChange" {
                    guard !variable.text.isEmpty else { continue }
                    let change = try XMLNode.parse(Array(variable.text.utf8), what: "the LastChange from \(sender)")
                    for instance in change.children("InstanceID") where (instance.attributes["val"] ?? "0") == "0" {
                        for value in instance.children { apply(value.name, value.attributes["val"] ?? "", channel: value.attributes["channel"]) }
                    }
                } else {
                    apply(variable.name, variable.text, channel: nil)
                }
            }
        }
    }

    private mutating func apply(_ name: String, _ value: String, channel: String?) {
        guard channel == nil || channel == "Master" else { return }
        switch name {
        case "TransportState": transportState = value
        case "TransportStatus": transportStatus = value
        case "AVTransportURI", "CurrentTrackURI": if currentURI == nil || name == "AVTransportURI" { currentURI = value }
        case "CurrentTrackDuration", "CurrentMediaDuration": if duration == nil { duration = UPnPTime.seconds(value) }
        case "RelativeTimePosition": position = UPnPTime.seconds(value)
        case "Volume": volume = Int(value)
        case "Mute": muted = value == "1" || value.lowercased() == "true"
        default: break
        }
    }
}
