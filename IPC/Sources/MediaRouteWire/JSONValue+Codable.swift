import MediaRouteIPC

/// Members the wire carries as they are (a playback change set read by the driver, a hello
/// identity): `WireDecoder`/`WireEncoder` pass them through untouched; other coders get this.
extension JSONValue: Codable {
    private struct AnyKey: CodingKey {
        let stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    public init(from decoder: any Decoder) throws {
        if let object = try? decoder.container(keyedBy: AnyKey.self) {
            self = .object(JSONObject(try object.allKeys.map { (key: $0.stringValue, value: try object.decode(JSONValue.self, forKey: $0)) }))
        } else if var array = try? decoder.unkeyedContainer() {
            var elements: [JSONValue] = []
            while !array.isAtEnd { elements.append(try array.decode(JSONValue.self)) }
            self = .array(elements)
        } else {
            let single = try decoder.singleValueContainer()
            if single.decodeNil() { self = .null } else if let b = try? single.decode(Bool.self) { self = .bool(b) } else if let i = try? single.decode(Int64.self) {
                self = .integer(i)
            } else if let d = try? single.decode(Double.self) { self = .double(d) } else { self = .string(try single.decode(String.self)) }
        }
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .null:
            var single = encoder.singleValueContainer()
            try single.encodeNil()
        case .bool(let b):
            var single = encoder.singleValueContainer()
            try single.encode(b)
        case .integer(let i):
            var single = encoder.singleValueContainer()
            try single.encode(i)
        case .double(let d):
            var single = encoder.singleValueContainer()
            try single.encode(d)
        case .string(let s):
            var single = encoder.singleValueContainer()
            try single.encode(s)
        case .array(let elements):
            var array = encoder.unkeyedContainer()
            for element in elements { try array.encode(element) }
        case .object(let object):
            var container = encoder.container(keyedBy: AnyKey.self)
            for member in object.members { try container.encode(member.value, forKey: AnyKey(stringValue: member.key)) }
        }
    }
}

/// A sample format (§13.3) in a message: read and written by its own checked wire form.
extension SampleFormat: Codable {
    public init(from decoder: any Decoder) throws {
        let value = try decoder.singleValueContainer().decode(JSONValue.self)
        do { self = try SampleFormat(json: value) } catch { throw WireDecodingError(path: decoder.codingPath, error.message) }
    }

    public func encode(to encoder: any Encoder) throws {
        var single = encoder.singleValueContainer()
        try single.encode(json)
    }
}
