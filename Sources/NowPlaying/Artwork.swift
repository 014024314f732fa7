import Foundation

/// A picture for content, made only when the system shows it, at about the size it asks for; the
/// system keeps it by `id`, so a picture is asked for once per id.
public struct Artwork: Identifiable, Sendable {
    public let id: String
    let provider: @Sendable (CGSize) async throws -> ArtworkRepresentation

    public init(id: String, artworkProvider: @escaping @Sendable (CGSize) async throws -> ArtworkRepresentation) {
        self.id = id
        provider = artworkProvider
    }
}

/// An encoded picture: PNG, JPEG, GIF or WebP bytes (what the desktop reads from a file).
public struct ArtworkRepresentation: Sendable {
    public enum ArtworkRepresentationError: Error, Hashable, Sendable {
        case noRepresentationAvailable
    }

    public let data: Data

    /// Throws `noRepresentationAvailable` for empty data.
    public init(data: Data) throws {
        guard !data.isEmpty else { throw ArtworkRepresentationError.noRepresentationAvailable }
        self.data = data
    }
}
