import Foundation
import MediaDevice
import MediaRouteIPC

/// Remote media sessions (NowPlaying): started, updated and ended by an app or by a push, made and
/// kept by the app's extension (its own process, supervised like a driver), shown on the desktop.
/// The supervisor holds each session's last attributes, so an extension that crashes gets every
/// session back when it restarts, and commands keep reaching the same instance.
extension Supervisor {
    /// Where a session's start, update or end came from: an app's request, or a push with its
    /// `timestamp` (seconds since 1970), which orders pushes.
    enum RemoteOrigin: Sendable {
        case app
        case push(timestamp: Double)
    }

    /// What became of an update.
    enum RemoteUpdate: Sendable, Equatable {
        case applied
        /// A push older than the newest one taken: nothing changed.
        case stale(newest: Double)
    }

    func startRemoteSession(application: String, attributes: JSONValue, origin: RemoteOrigin) async throws -> RemoteSessionRecord {
        let id = try RemoteSessionTable.checkedID(of: attributes)
        let record = try remoteExtension(of: application)
        guard remote.entry(application: application, id: id) == nil else {
            throw MediaDeviceError(.sessionFailed, "\(application) already has a remote session \"\(id)\": update it, or end it first")
        }
        guard remote.entries(of: application).count < RemoteSessionTable.sessionsPerApplication else {
            throw MediaDeviceError(.busy, "\(application) already has \(RemoteSessionTable.sessionsPerApplication) remote sessions, its limit; end some first")
        }
        let entry = remote.add(application: application, id: id, attributes: attributes, timestamp: origin.timestamp)
        do {
            try await ensureMade(entry, by: record)
        } catch {
            if remote[entry.key] === entry { remote.remove(entry) }
            scheduleIdleExit(record)
            throw error
        }
        logger.info("remote session \"\(id)\" of \(application) started (\(entry.key))")
        return entry.record
    }

    func updateRemoteSession(application: String, id: String, attributes: JSONValue, origin: RemoteOrigin) async throws -> RemoteUpdate {
        let entry = try remoteEntry(application: application, id: id)
        let given = try RemoteSessionTable.checkedID(of: attributes)
        guard given == id else { throw MediaDeviceError(.sessionFailed, "the attributes' id \"\(given)\" is not the session's \"\(id)\": an update must keep the id") }
        if case .push(let timestamp) = origin {
            guard timestamp >= entry.timestamp else { return .stale(newest: entry.timestamp) }
            entry.timestamp = timestamp
        }
        entry.attributes = attributes
        // A session its extension does not hold now (it crashed) is made again with these.
        if entry.isMade, let record = fleet.remoteMediaExtension(of: application) {
            try await call(record, ToExtension.Update(session: entry.key, attributes: attributes))
        }
        return .applied
    }

    func endRemoteSession(application: String, id: String) throws {
        let entry = try remoteEntry(application: application, id: id)
        end(entry, reason: "ended by \(application)")
    }

    func remoteSessions(of application: String) -> [RemoteSessionRecord] { remote.entries(of: application).map(\.record) }

    /// One session as the supervisor holds it (tests, benchmarks).
    package func remoteSession(application: String, id: String) -> (key: String, state: RemoteSessionState?, isMade: Bool)? {
        remote.entry(application: application, id: id).map { ($0.key, $0.state, $0.isMade) }
    }

    /// Shows the session under the desktop's stable MPRIS name. On Linux there is no foreground app
    /// to ask for it: a connected app may, a push may not.
    func makeSystemPrimary(application: String, id: String) throws {
        let entry = try remoteEntry(application: application, id: id)
        remote.primary = entry.key
        mpris?.setPrimary(entry.key)
        logger.info("remote session \"\(id)\" of \(application) is system-primary")
    }

    /// A command for a session (from the desktop's media controls): to its extension, refused when
    /// the session does not take it now.
    func remoteCommand(_ key: String, _ command: ToExtension.Command) async throws {
        guard let entry = remote[key] else { throw MediaDeviceError(.deviceNotFound, "no remote session \(key) is shown") }
        if let needed = command.command.needs, entry.state?.enables(needed) != true {
            throw MediaDeviceError(.unsupported, "the remote session \"\(entry.id)\" of \(entry.application) does not take \(needed.rawValue) now")
        }
        let record = try remoteExtension(of: entry.application)
        // An extension restarting after a crash gets the session back before its commands.
        try await ensureMade(entry, by: record)
        try await call(record, command)
    }

    // MARK: The extension's lifecycle

    /// Makes again every session of the extension's app that it does not hold (it crashed and
    /// restarted), with their last attributes; a session it refuses now ends.
    func remakeRemoteSessions(_ record: DriverRecord) async {
        guard case .remoteMediaExtension(let application) = record.manifest.kind else { return }
        for entry in remote.entries(of: application) where entry.needsRemaking {
            do {
                try await ensureMade(entry, by: record)
                logger.info("remote session \"\(entry.id)\" of \(application) made again by its restarted extension")
            } catch {
                if remote[entry.key] === entry { end(entry, reason: "its extension could not make it again: \(error)") }
            }
        }
        scheduleIdleExit(record)
    }

    /// The extension ended: its sessions wait for it to be restarted (they are made again then),
    /// or end with it when it stays down.
    func remoteExtensionExited(_ record: DriverRecord, _ description: String) {
        guard case .remoteMediaExtension(let application) = record.manifest.kind else { return }
        let entries = remote.entries(of: application)
        for entry in entries where entry.isMade {
            entry.isMade = false
            entry.needsRemaking = true
        }
        guard !entries.isEmpty else { return }
        switch record.phase {
        case .backingOff:
            return
        case .stopped where !isShuttingDown && !book.isDisabled(record.id):
            // Stopped on purpose (restarted by the operator): its sessions need it running.
            Task { _ = try? await self.ensureRunning(record) }
        default:
            for entry in entries { end(entry, reason: "its extension \(record.id) \(description)") }
        }
    }

    /// What an extension reports.
    func extensionHandlers(_ id: String) -> RPCHandlers {
        var handlers = RPCHandlers()
        report(FromExtension.State.self, from: id, into: &handlers) { supervisor, report, record throws(RPCError) in
            if let problem = report.state.problem { throw .invalidParams("remote.state: \(problem)") }
            // A state for a session that just ended is dropped quietly: the extension may not know yet.
            guard let entry = supervisor.remote[report.session], entry.isMade,
                  record.manifest.kind == .remoteMediaExtension(application: entry.application) else { return }
            supervisor.show(entry, report.state, from: record)
        }
        return handlers
    }

    // MARK: Parts

    private func remoteExtension(of application: String) throws(MediaDeviceError) -> DriverRecord {
        guard let record = fleet.remoteMediaExtension(of: application) else {
            throw MediaDeviceError(.unsupported, "no NowPlaying extension makes the remote sessions of \(application): install a manifest with \"extensionPoint\": \"\(ExtensionIdentity.remoteMediaExtensionPoint)\" and \"application\": \"\(application)\" in a drivers directory")
        }
        return record
    }

    private func remoteEntry(application: String, id: String) throws(MediaDeviceError) -> RemoteSessionTable.Entry {
        guard let entry = remote.entry(application: application, id: id) else {
            throw MediaDeviceError(.deviceNotFound, "\(application) has no remote session \"\(id)\"")
        }
        return entry
    }

    /// Has the extension make the session unless it holds it; one making at a time, which the
    /// others wait for.
    private func ensureMade(_ entry: RemoteSessionTable.Entry, by record: DriverRecord) async throws {
        if entry.isMade { return }
        if let making = entry.making { return try await making.value }
        let making = Task { try await self.make(entry, with: record) }
        entry.making = making
        defer { entry.making = nil }
        try await making.value
    }

    /// Has the extension make the session from its attributes, then sends it the attributes that
    /// came while it did (a push may update a session being made).
    private func make(_ entry: RemoteSessionTable.Entry, with record: DriverRecord) async throws {
        var sent = entry.attributes
        let made = try await call(record, ToExtension.Session(session: entry.key, attributes: sent, pushToken: entry.pushToken))
        guard remote[entry.key] === entry else { throw MediaDeviceError(.sessionFailed, "the remote session \"\(entry.id)\" was ended while its extension made it") }
        if let problem = made.state.problem {
            violation(record.id, "remote.session: \(problem)")
            throw MediaDeviceError(.sessionFailed, "the extension \(record.id) answered with a state it may not: \(problem)")
        }
        entry.isMade = true
        entry.needsRemaking = false
        show(entry, made.state, from: record)
        while entry.attributes != sent, remote[entry.key] === entry {
            sent = entry.attributes
            try await call(record, ToExtension.Update(session: entry.key, attributes: sent))
        }
    }

    /// Ends a session: its extension lets it go, the desktop stops showing it.
    private func end(_ entry: RemoteSessionTable.Entry, reason: String) {
        remote.remove(entry)
        mpris?.remove(remote: entry.key)
        if let file = entry.artwork?.file { unlink(file) }
        logger.info("remote session \"\(entry.id)\" of \(entry.application) ended: \(reason)")
        guard let record = fleet.remoteMediaExtension(of: entry.application) else { return }
        if entry.isMade { tellDriver(record, ToExtension.End(session: entry.key)) }
        scheduleIdleExit(record)
    }

    /// Keeps what a session shows and shows it on the desktop.
    private func show(_ entry: RemoteSessionTable.Entry, _ state: RemoteSessionState, from record: DriverRecord) {
        entry.state = state
        showOnDesktop(entry)
        if let artwork = state.content?.artwork, artwork != entry.artwork?.id {
            Task { await self.fetchArtwork(artwork, of: entry, from: record) }
        }
    }

    /// Where the artwork shown lives: emptied when the supervisor starts and stops, since remote
    /// sessions do not outlive it.
    var artworkDirectory: String { (configuration.stateDirectory as NSString).appendingPathComponent("artwork") }

    /// The largest artwork taken from an extension.
    static let maximumArtwork = 4 << 20

    /// Asks the extension for an artwork's picture and keeps it in a file the desktop can read
    /// (MPRIS takes art as a file URL); a picture that is not PNG, JPEG, GIF or WebP is refused.
    private func fetchArtwork(_ artwork: String, of entry: RemoteSessionTable.Entry, from record: DriverRecord) async {
        entry.artwork = (artwork, entry.artwork?.file ?? "")
        let picture: ToExtension.Artwork.Picture
        do {
            picture = try await call(record, ToExtension.Artwork(session: entry.key, artwork: artwork, width: 512, height: 512))
        } catch {
            logger.warning("remote session \"\(entry.id)\": no picture for artwork \"\(artwork)\": \(error)")
            return
        }
        let bytes = picture.data.bytes
        guard bytes.count <= Self.maximumArtwork, let suffix = ImageKind(Array(bytes))?.rawValue else {
            logger.warning("remote session \"\(entry.id)\": the picture of artwork \"\(artwork)\" is not a PNG, JPEG, GIF or WebP of at most \(Self.maximumArtwork) bytes; not shown")
            return
        }
        guard remote[entry.key] === entry, entry.artwork?.id == artwork else { return }
        let directory = artworkDirectory
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        // A new name for each picture: desktops cache art by URL.
        let file = (directory as NSString).appendingPathComponent("\(entry.key)-\(RemoteSessionTable.makeToken().prefix(16)).\(suffix)")
        guard FileManager.default.createFile(atPath: file, contents: bytes, attributes: [.posixPermissions: 0o600]) else {
            logger.warning("remote session \"\(entry.id)\": cannot write its artwork to \(file)")
            return
        }
        if let old = entry.artwork?.file, !old.isEmpty { unlink(old) }
        entry.artwork = (artwork, file)
        showOnDesktop(entry)
    }
}

extension Supervisor.RemoteOrigin {
    /// What orders pushes: an app's changes come in order on its connection and are older than
    /// any push (pushes are ordered among themselves, by their sender's clock).
    var timestamp: Double {
        switch self {
        case .app: 0
        case .push(let timestamp): timestamp
        }
    }
}

/// A picture's format, by its first bytes.
private enum ImageKind: String {
    case png, jpg, gif, webp

    init?(_ bytes: [UInt8]) {
        if bytes.starts(with: [0x89, 0x50, 0x4E, 0x47]) { self = .png }
        else if bytes.starts(with: [0xFF, 0xD8, 0xFF]) { self = .jpg }
        else if bytes.starts(with: Array("GIF8".utf8)) { self = .gif }
        else if bytes.count >= 12, bytes.starts(with: Array("RIFF".utf8)), Array(bytes[8..<12]) == Array("WEBP".utf8) { self = .webp }
        else { return nil }
    }
}
