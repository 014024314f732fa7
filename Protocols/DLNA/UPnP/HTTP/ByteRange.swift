import Foundation

/// The one byte range a `Range` header asks of a file of known size (RFC 9110 §14).
///
/// Several ranges (`bytes=0-1,5-6`), other units and headers that do not parse are ignored: the
/// whole file is answered 200, as RFC 9110 allows; multipart/byteranges is not worth it for
/// renderers, which ask one range at a time.
struct ByteRange: Equatable {
    let first: Int64
    let last: Int64
    var count: Int64 { last - first + 1 }

    enum Request: Equatable {
        case whole
        case partial(ByteRange)
        /// The range starts past the end (or asks for a zero-byte suffix): 416.
        case unsatisfiable
    }

    static func parse(_ header: String?, size: Int64) -> Request {
        guard let header else { return .whole }
        let text = header.trimmingCharacters(in: .whitespaces)
        guard text.lowercased().hasPrefix("bytes=") else { return .whole }
        let spec = text.dropFirst("bytes=".count).trimmingCharacters(in: .whitespaces)
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return .whole }
        let start = spec[..<dash].trimmingCharacters(in: .whitespaces)
        let end = spec[spec.index(after: dash)...].trimmingCharacters(in: .whitespaces)
        if start.isEmpty {
            guard let suffix = Int64(digits: end) else { return .whole }
            guard suffix > 0, size > 0 else { return .unsatisfiable }
            return .partial(ByteRange(first: max(0, size - suffix), last: size - 1))
        }
        guard let first = Int64(digits: start) else { return .whole }
        var last = size - 1
        if !end.isEmpty {
            guard let requested = Int64(digits: end), requested >= first else { return .whole }
            last = min(requested, size - 1)
        }
        guard first < size else { return .unsatisfiable }
        return .partial(ByteRange(first: first, last: last))
    }
}

private extension Int64 {
    /// Decimal digits only (no sign, no spaces), as range values are written.
    init?(digits: String) {
        guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        // A value too large for 64 bits is still a number: "to the end" in effect.
        self = Int64(digits) ?? .max
    }
}
