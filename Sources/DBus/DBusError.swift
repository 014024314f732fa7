/// A D-Bus error: the error name a peer (or the bus, or this library) answered with, and its
/// message. Names are what programs match on; messages are for people.
public struct DBusError: Error, Sendable, Equatable, CustomStringConvertible {
    public var name: String
    public var message: String

    public init(name: String, message: String) {
        self.name = name
        self.message = message
    }

    public var description: String { message.isEmpty ? name : "\(name): \(message)" }

    public static let failed = "org.freedesktop.DBus.Error.Failed"
    public static let serviceUnknown = "org.freedesktop.DBus.Error.ServiceUnknown"
    public static let nameHasNoOwner = "org.freedesktop.DBus.Error.NameHasNoOwner"
    public static let unknownMethod = "org.freedesktop.DBus.Error.UnknownMethod"
    public static let unknownObject = "org.freedesktop.DBus.Error.UnknownObject"
    public static let unknownInterface = "org.freedesktop.DBus.Error.UnknownInterface"
    public static let unknownProperty = "org.freedesktop.DBus.Error.UnknownProperty"
    public static let propertyReadOnly = "org.freedesktop.DBus.Error.PropertyReadOnly"
    public static let invalidArgs = "org.freedesktop.DBus.Error.InvalidArgs"
    public static let noReply = "org.freedesktop.DBus.Error.NoReply"
    public static let timeout = "org.freedesktop.DBus.Error.Timeout"
    public static let accessDenied = "org.freedesktop.DBus.Error.AccessDenied"
    public static let disconnected = "org.freedesktop.DBus.Error.Disconnected"
    public static let noMemory = "org.freedesktop.DBus.Error.NoMemory"
    /// Our own: the calling task was cancelled before the answer came.
    public static let cancelled = "org.mediaroute.DBus.Error.Cancelled"

    public static func invalidArguments(_ message: String) -> DBusError { DBusError(name: invalidArgs, message: message) }
    static func disconnected(_ message: String) -> DBusError { DBusError(name: disconnected, message: message) }
}
