import Foundation
import MediaDevice
import MediaRouteIPC

/// The artwork of remote sessions: asked of the extension once per id (one request at a time per
/// session, the latest id wanted next), kept in a file the desktop reads (MPRIS takes art as a
/// file URL), and shown only while the session shows that artwork.
extension Supervisor {
    /// Where the artwork shown lives: emptied when the supervisor starts and stops, since remote
    /// sessions do not outlive it.
    var artworkDirectory: String { (configuration.stateDirectory as NSString).appendingPathComponent("artwork") }

    /// The largest picture taken from an extension.
    static let maximumArtwork = 4 << 20
    /// How long an extension may take to give a picture (it may fetch it from a server): past it,
    /// the request is abandoned, and the extension is not judged hung for it.
    static let artworkTimeout: Duration = .seconds(10)

    /// The session's artwork is another now: the old picture goes.
    func dropArtwork(of entry: RemoteSessionTable.Entry) {
        if let file = entry.artwork?.file, !file.isEmpty { unlink(file) }
        entry.artwork = nil
    }

    /// Asks for `artwork` unless it is being asked already; while another is, it is asked next.
    func wantArtwork(_ artwork: String, of entry: RemoteSessionTable.Entry, from record: DriverRecord) {
        entry.artworkWanted = artwork
        guard entry.artworkFetching == nil else { return }
        entry.artworkFetching = artwork
        Task { await self.fetchArtwork(of: entry, from: record) }
    }

    private func fetchArtwork(of entry: RemoteSessionTable.Entry, from record: DriverRecord) async {
        while let artwork = entry.artworkWanted, remote[entry.key] === entry, entry.state?.content?.artwork == artwork, entry.artwork?.id != artwork {
            entry.artworkFetching = artwork
            entry.artworkWanted = nil
            if let file = await picture(artwork, of: entry, from: record), remote[entry.key] === entry, entry.state?.content?.artwork == artwork {
                dropArtwork(of: entry)
                entry.artwork = (artwork, file)
                showOnDesktop(entry)
            }
        }
        entry.artworkFetching = nil
    }

    /// The picture of `artwork`, written to a file of its own (desktops cache art by URL); nil,
    /// with the reason logged, when there is none.
    private func picture(_ artwork: String, of entry: RemoteSessionTable.Entry, from record: DriverRecord) async -> String? {
        let bytes: Data
        do {
            guard let process = record.process else { throw MediaDeviceError(.driverFailed, "extension \(record.id) is not running") }
            let request = ToExtension.Artwork(session: entry.key, artwork: artwork, width: 512, height: 512)
            bytes = try await process.connection.call(request, timeout: Self.artworkTimeout).data.bytes
        } catch {
            logger.warning("remote session \"\(entry.id)\": no picture for artwork \"\(artwork)\": \(error)")
            return nil
        }
        guard bytes.count <= Self.maximumArtwork, let suffix = ImageKind(Array(bytes))?.rawValue else {
            logger.warning("remote session \"\(entry.id)\": the picture of artwork \"\(artwork)\" is not a PNG, JPEG, GIF or WebP of at most \(Self.maximumArtwork) bytes; not shown")
            return nil
        }
        try? FileManager.default.createDirectory(atPath: artworkDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let file = (artworkDirectory as NSString).appendingPathComponent("\(entry.key)-\(RandomToken.make().prefix(16)).\(suffix)")
        guard FileManager.default.createFile(atPath: file, contents: bytes, attributes: [.posixPermissions: 0o600]) else {
            logger.warning("remote session \"\(entry.id)\": cannot write its artwork to \(file)")
            return nil
        }
        return file
    }
}
