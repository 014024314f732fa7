import Logging

/// One entry of journald's native protocol: fields `NAME=value`, each on its own line, or, for a
/// value with a newline in it, `NAME`, a newline, the value's length as 64 bits little-endian, the
/// value and a newline (systemd's "Native Journal Protocol").
public struct JournalEntry: Sendable {
    public private(set) var fields: [(name: String, value: String)] = []

    public init() {}

    /// Adds a field. `name` must be a valid field name (`isValidFieldName`).
    public mutating func append(_ name: String, _ value: String) { fields.append((name, value)) }

    /// The datagram journald reads.
    public var datagram: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(fields.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count + 10 })
        for (name, value) in fields {
            bytes += name.utf8
            if value.utf8.contains(UInt8(ascii: "\n")) {
                bytes.append(UInt8(ascii: "\n"))
                var length = UInt64(value.utf8.count).littleEndian
                withUnsafeBytes(of: &length) { bytes += $0 }
            } else {
                bytes.append(UInt8(ascii: "="))
            }
            bytes += value.utf8
            bytes.append(UInt8(ascii: "\n"))
        }
        return bytes
    }

    /// The syslog priority journald files a swift-log level under (sd-daemon's `SD_*` levels):
    /// trace and debug 7, info 6, notice 5, warning 4, error 3, critical 2.
    public static func priority(of level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }

    /// The field a swift-log metadata key is kept in: `MEDIAROUTE_` and the key in capitals, any
    /// character journald does not take in a name made `_` (`driver` is `MEDIAROUTE_DRIVER`,
    /// `session` `MEDIAROUTE_SESSION`); at most 64 characters, as journald allows.
    public static func fieldName(forMetadataKey key: String) -> String {
        let name = "MEDIAROUTE_" + String(key.uppercased().unicodeScalars.map { scalar -> Character in
            ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar) ? Character(scalar) : "_"
        })
        return String(name.prefix(64))
    }
}
