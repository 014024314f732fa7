/// A small stand-in for UniformTypeIdentifiers' `UTType`: enough to name a media sharing protocol.
///
/// A driver's protocol is a reverse-DNS identifier exported by the driver (the manifest's
/// `exportedType`), conforming to `public.media-sharing-protocol`.
public struct UTType: Hashable, Sendable, CustomStringConvertible {
    public let identifier: String

    /// The type a driver declares as its own, as in its manifest's `exportedType.identifier`.
    public init(exportedAs identifier: String) { self.identifier = identifier }

    /// The type every media sharing protocol conforms to.
    public static let mediaSharingProtocol = UTType(exportedAs: "public.media-sharing-protocol")

    public var description: String { identifier }

    /// True for a syntactically valid reverse-DNS identifier (`org.example.protocol`).
    public var isWellFormed: Bool {
        let parts = identifier.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count >= 2 && identifier.utf8.count <= 255 && parts.allSatisfy { part in
            !part.isEmpty && part.utf8.allSatisfy { $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") || (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) }
        }
    }
}
