import CAvahi

/// One instance of a DNS-SD service, resolved to an address, port and TXT record.
public struct ResolvedService: Sendable, Hashable, CustomStringConvertible {
    /// The instance as DNS-SD names it; the same service seen on two interfaces is two instances.
    public struct Instance: Sendable, Hashable {
        public let name: String
        public let type: String
        public let domain: String
        public let interface: Int32
    }

    public let instance: Instance
    public var name: String { instance.name }
    public let hostName: String
    /// Numeric IPv4 address.
    public let address: String
    public let port: UInt16
    /// TXT keys and values; a key without "=" has an empty value.
    public let txt: [String: String]

    public var description: String { "\(name) at \(address):\(port)" }

    /// Reads an Avahi string list into keys and values (values that are not UTF-8 are repaired).
    static func txt(from list: UnsafeMutablePointer<AvahiStringList>?) -> [String: String] {
        var result: [String: String] = [:]
        var item = list
        while let current = item {
            var key: UnsafeMutablePointer<CChar>? = nil
            var value: UnsafeMutablePointer<CChar>? = nil
            var length = 0
            if avahi_string_list_get_pair(current, &key, &value, &length) == 0, let key {
                result[String(cString: key)] = value.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: length), as: UTF8.self) } ?? ""
                avahi_free(key)
                avahi_free(value)
            }
            item = avahi_string_list_get_next(current)
        }
        return result
    }

    /// An Avahi string list for `pairs`, in order; the caller frees it.
    static func stringList(_ pairs: [(String, String)]) -> UnsafeMutablePointer<AvahiStringList>? {
        var list: UnsafeMutablePointer<AvahiStringList>? = nil
        for (key, value) in pairs.reversed() { list = avahi_string_list_add_pair(list, key, value) }
        return list
    }
}
