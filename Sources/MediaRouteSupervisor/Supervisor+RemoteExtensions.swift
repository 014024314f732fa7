import Foundation
import MediaDevice
import MediaRouteIPC

/// The extension's side of remote sessions: sessions made (once at a time, and again after a
/// crash), what the extension reports, and sessions ended with it when it stays down.
extension Supervisor {
    /// Has the extension make the session unless it holds it; one making at a time, which the
    /// others wait for.
    func ensureMade(_ entry: RemoteSessionTable.Entry, by record: DriverRecord) async throws {
        if entry.isMade { return }
        if let making = entry.making { return try await making.value }
        let making = Task { try await self.make(entry, with: record) }
        entry.making = making
        defer { entry.making = nil }
        try await making.value
    }

    /// Has the extension make the session from its kept attributes, and shows what it shows.
    private func make(_ entry: RemoteSessionTable.Entry, with record: DriverRecord) async throws {
        let process = try await ensureRunning(record)
        entry.stateWhileMaking = nil
        let made = try await call(record, ToExtension.Session(session: entry.key, attributes: entry.attributes, pushToken: entry.pushToken))
        guard remote[entry.key] === entry else {
            tellDriver(record, ToExtension.End(session: entry.key))
            throw MediaDeviceError(.sessionFailed, "the remote session \"\(entry.id)\" was ended while its extension made it")
        }
        // An extension that ended right after answering (its exit taken before this resumed) does
        // not hold it: the next one makes it again.
        guard record.process === process, process.termination == nil else {
            entry.needsRemaking = true
            throw MediaDeviceError(.driverFailed, "extension \(record.id) ended as it made the remote session \"\(entry.id)\"")
        }
        // What it sent after its answer is newer than the answer.
        let state = entry.stateWhileMaking ?? made.state
        entry.stateWhileMaking = nil
        if let problem = state.problem {
            violation(record.id, "remote.session: \(problem)")
            throw MediaDeviceError(.sessionFailed, "the extension \(record.id) answered with a state it may not: \(problem)")
        }
        entry.isMade = true
        entry.needsRemaking = false
        show(entry, state, from: record)
    }

    /// Makes again every session of the extension's app that it held before it crashed, from
    /// their kept attributes. A session it refuses now ends; one it could not take because it
    /// failed again waits for its next start.
    func remakeRemoteSessions(_ record: DriverRecord) async {
        guard case .remoteMediaExtension(let application) = record.manifest.kind else { return }
        for entry in remote.entries(of: application) where entry.needsRemaking {
            do {
                try await ensureMade(entry, by: record)
                logger.info("remote session \"\(entry.id)\" of \(application) made again by its restarted extension", metadata: ["session": "\(entry.id)"])
            } catch let error as MediaDeviceError where error.code == .driverFailed || error.code == .timedOut {
                logger.notice("remote session \"\(entry.id)\" of \(application) waits for its extension: \(error.message)", metadata: ["session": "\(entry.id)"])
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
        for entry in entries where entry.isMade || entry.making != nil {
            entry.isMade = false
            entry.needsRemaking = true
        }
        guard !entries.isEmpty else { return }
        switch record.phase {
        case .backingOff:
            return
        case .stopped where !isShuttingDown && !isDisabled(record.id):
            // Stopped on purpose (restarted by the operator): its sessions need it running.
            Task { _ = try? await self.ensureRunning(record) }
        default:
            remoteExtensionGaveUp(record, description)
        }
    }

    /// The extension stays down (its budget spent, refused, disabled): its sessions end.
    func remoteExtensionGaveUp(_ record: DriverRecord, _ why: String) {
        guard case .remoteMediaExtension(let application) = record.manifest.kind else { return }
        for entry in remote.entries(of: application) { end(entry, reason: "its extension \(record.id) \(why)") }
    }

    /// Sessions whose app no extension makes any more (its manifest was removed or changed) end.
    func endOrphanedRemoteSessions() {
        for entry in remote.entries where fleet.remoteMediaExtension(of: entry.application) == nil {
            end(entry, reason: "no extension makes the remote sessions of \(entry.application) any more")
        }
    }

    /// What an extension reports.
    func extensionHandlers(_ id: String) -> RPCHandlers {
        var handlers = RPCHandlers()
        report(FromExtension.State.self, from: id, into: &handlers) { supervisor, report, record throws(RPCError) in
            if let problem = report.state.problem { throw .invalidParams("remote.state: \(problem)") }
            // A state for a session that just ended is dropped quietly: the extension may not know yet.
            guard let entry = supervisor.remote[report.session], record.manifest.kind == .remoteMediaExtension(application: entry.application) else { return }
            if entry.isMade {
                supervisor.show(entry, report.state, from: record)
            } else if entry.making != nil {
                entry.stateWhileMaking = report.state
            }
        }
        return handlers
    }

    /// Ends a session: its extension lets it go, the desktop stops showing it.
    func end(_ entry: RemoteSessionTable.Entry, reason: String) {
        remote.remove(entry)
        mpris?.remove(remote: entry.key)
        if let file = entry.artwork?.file, !file.isEmpty { unlink(file) }
        logger.info("remote session \"\(entry.id)\" of \(entry.application) ended: \(reason)", metadata: ["session": "\(entry.id)"])
        guard let record = fleet.remoteMediaExtension(of: entry.application) else { return }
        if entry.isMade { tellDriver(record, ToExtension.End(session: entry.key)) }
        scheduleIdleExit(record)
    }

    /// Keeps what a session shows and shows it on the desktop.
    func show(_ entry: RemoteSessionTable.Entry, _ state: RemoteSessionState, from record: DriverRecord) {
        entry.state = state
        if state.content?.artwork != entry.artwork?.id { dropArtwork(of: entry) }
        showOnDesktop(entry)
        if let artwork = state.content?.artwork, artwork != entry.artwork?.id { wantArtwork(artwork, of: entry, from: record) }
    }
}
