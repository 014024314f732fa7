/// An object path (`/org/bluez/hci0`). Checked when a message carrying it is built: an invalid
/// one is a `DBusError` then, never a crash.
public struct DBusObjectPath: Sendable, Hashable, RawRepresentable, ExpressibleByStringLiteral, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { rawValue = value }
    public var description: String { rawValue }

    /// `"/org/bluez".appending("hci0")` is `/org/bluez/hci0`.
    public func appending(_ component: String) -> DBusObjectPath {
        DBusObjectPath(rawValue == "/" ? "/" + component : rawValue + "/" + component)
    }

    /// The path rules of the D-Bus specification: `/`, or `/`-separated non-empty elements of
    /// `[A-Za-z0-9_]`, with no trailing `/`.
    public var isValid: Bool {
        guard rawValue.hasPrefix("/") else { return false }
        if rawValue == "/" { return true }
        return rawValue.dropFirst().split(separator: "/", omittingEmptySubsequences: false).allSatisfy { element in
            !element.isEmpty && element.utf8.allSatisfy { $0 == UInt8(ascii: "_") || ($0 >= 48 && $0 <= 57) || ($0 | 0x20 >= 97 && $0 | 0x20 <= 122) }
        }
    }
}

/// A type signature (`a{sv}`), kept as text.
public struct DBusSignature: Sendable, Hashable, ExpressibleByStringLiteral, CustomStringConvertible {
    public let rawValue: String
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { rawValue = value }
    public var description: String { rawValue }
}
