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
            if remote[entry.key] === entry { end(entry, reason: "it could not be started: \(error)") }
            throw error
        }
        logger.info("remote session \"\(id)\" of \(application) started (\(entry.key))", metadata: ["session": "\(id)"])
        return entry.record
    }

    /// Sends new attributes to the session's extension, and keeps them once it took them: a
    /// refused update changes nothing. A push older than the newest one taken (or being sent) is
    /// stale; of updates sent at once, the last sent is the one kept.
    func updateRemoteSession(application: String, id: String, attributes: JSONValue, origin: RemoteOrigin) async throws -> RemoteUpdate {
        let entry = try remoteEntry(application: application, id: id)
        let given = try RemoteSessionTable.checkedID(of: attributes)
        guard given == id else { throw MediaDeviceError(.sessionFailed, "the attributes' id \"\(given)\" is not the session's \"\(id)\": an update must keep the id") }
        let record = try remoteExtension(of: application)
        let before = entry.timestamp
        if case .push(let timestamp) = origin {
            guard timestamp >= entry.timestamp else { return .stale(newest: entry.timestamp) }
            entry.timestamp = timestamp
        }
        let sequence: Int
        do {
            // A session its restarting extension does not hold yet is made again first.
            try await ensureMade(entry, by: record)
            if case .push(let timestamp) = origin, timestamp < entry.timestamp { return .stale(newest: entry.timestamp) }
            sequence = entry.nextUpdate()
            try await call(record, ToExtension.Update(session: entry.key, attributes: attributes))
        } catch {
            if case .push(let timestamp) = origin, entry.timestamp == timestamp { entry.timestamp = before }
            throw error
        }
        if sequence > entry.keptUpdate {
            entry.keptUpdate = sequence
            entry.attributes = attributes
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
        logger.info("remote session \"\(id)\" of \(application) is system-primary", metadata: ["session": "\(id)"])
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

    // MARK: Parts

    func remoteExtension(of application: String) throws(MediaDeviceError) -> DriverRecord {
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
