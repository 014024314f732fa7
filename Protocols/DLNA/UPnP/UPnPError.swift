/// Why a renderer could not be used or an action failed, as a sentence a person can act on.
public struct UPnPError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        /// The device description is missing something a renderer must have, or is not XML.
        case brokenDescription
        /// The renderer answered an action with a SOAP fault carrying this UPnP error code.
        case fault(code: Int)
        /// The renderer answered with an HTTP error status and no UPnP error.
        case httpStatus(Int)
        /// It could not be reached, or did not answer in time.
        case unreachable
        /// It answered something that is not what UPnP says it must be.
        case malformedAnswer
    }

    public let kind: Kind
    public let description: String

    public init(_ kind: Kind, _ description: String) {
        self.kind = kind
        self.description = description
    }

    /// Whether the renderer itself is gone (the session should end), as opposed to refusing one action.
    public var isUnreachable: Bool { kind == .unreachable }

    /// What the UDA and AVTransport/RenderingControl specifications say each code means.
    public static func meaning(of code: Int) -> String? {
        switch code {
        case 401: "invalid action"
        case 402: "invalid arguments"
        case 501: "the action failed"
        case 600: "argument value invalid"
        case 601: "argument value out of range"
        case 602: "optional action not implemented"
        case 701: "the transition is not available now"
        case 702: "no media is loaded"
        case 704: "the playback format is not supported"
        case 710: "this seek mode is not supported"
        case 711: "the seek target is out of range"
        case 714: "the MIME type is not supported"
        case 716: "the resource could not be found or fetched"
        case 718: "invalid instance ID"
        default: nil
        }
    }
}
