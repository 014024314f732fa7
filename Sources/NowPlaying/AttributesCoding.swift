import Foundation
import MediaRouteIPC

/// Attributes as they travel: JSON with dates as ISO 8601 text, the form a push carries.
enum AttributesCoding {
    static func encode<Attributes: Encodable>(_ attributes: Attributes) throws(RemoteMediaSessionError) -> JSONValue {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        do {
            return try JSONReader.parse(Array(try encoder.encode(attributes)))
        } catch {
            throw RemoteMediaSessionError(.invalidAttributes, "the attributes do not encode as JSON: \(sentence(error))")
        }
    }

    /// A decoding error as a sentence naming the member: `currentTrack.duration: expected a number`.
    static func sentence(_ error: any Error) -> String {
        func path(_ context: DecodingError.Context) -> String {
            let members = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
            return members.isEmpty ? "" : "\(members): "
        }
        switch error as? DecodingError {
        case .keyNotFound(let key, let context)?: return "\(path(context))\"\(key.stringValue)\" is missing"
        case .typeMismatch(_, let context)?, .valueNotFound(_, let context)?, .dataCorrupted(let context)?:
            return "\(path(context))\(context.debugDescription)"
        default: return "\(error)"
        }
    }
}
