import Foundation
import MediaRouteIPC
import MediaRouteWire

/// The remote media sessions the supervisor holds for apps' NowPlaying extensions: each with its
/// last attributes (so an extension that crashed gets them back), its push token, and what it
/// shows. Not Sendable: it lives in the supervisor and is touched only on its executor.
final class RemoteSessionTable {
    final class Entry {
        /// The supervisor's key, stable while the session lives: what the extension and MPRIS know it by.
        let key: String
        let application: String
        let id: String
        let pushToken: String
        var attributes: JSONValue
        /// The `timestamp` of the newest push taken (0 before any), in seconds since 1970: a push
        /// older than that is stale.
        var timestamp: Double
        /// What the session shows; nil until its extension made it.
        var state: RemoteSessionState?
        /// Whether the running extension holds the session.
        var isMade = false
        /// The extension held it and crashed: it is made again when the extension restarts.
        var needsRemaking = false
        /// The extension making it now: what else needs it made waits for this.
        var making: Task<Void, any Error>?
        /// A state the extension sent while making it (after its answer, so newer than the answer's).
        var stateWhileMaking: RemoteSessionState?
        /// The artwork shown, by the id the extension gave it, and the file it was written to.
        var artwork: (id: String, file: String)?
        /// The artwork asked of the extension now, and the one wanted next (one fetch at a time).
        var artworkFetching: String?
        var artworkWanted: String?

        /// Updates sent, and the last of them whose attributes were kept.
        private var updatesSent = 0
        var keptUpdate = 0

        /// Numbers an update about to be sent.
        func nextUpdate() -> Int {
            updatesSent += 1
            return updatesSent
        }

        init(key: String, application: String, id: String, pushToken: String, attributes: JSONValue, timestamp: Double) {
            (self.key, self.application, self.id, self.pushToken, self.attributes, self.timestamp) = (key, application, id, pushToken, attributes, timestamp)
        }

        var record: RemoteSessionRecord { RemoteSessionRecord(id: id, attributes: attributes, pushToken: pushToken) }
    }

    /// Sessions one app may hold at once: far more than a person has devices, few enough that a
    /// runaway app or server cannot grow the supervisor without bound.
    static let sessionsPerApplication = 32
    /// The largest attributes taken, encoded.
    static let maximumAttributes = 65_536

    private(set) var entries: [Entry] = []
    /// The session the desktop's controls reach under the stable MPRIS name.
    var primary: String?
    private var nextKey = 1
    /// The push tokens of the sessions that ended last.
    private var retiredTokens: [String] = []
    static let retiredTokensKept = 256

    subscript(key: String) -> Entry? { entries.first { $0.key == key } }

    func entry(application: String, id: String) -> Entry? { entries.first { $0.application == application && $0.id == id } }

    /// Every token compared in full (`RandomToken.same`), whichever matches.
    func entry(pushToken: String) -> Entry? {
        var found: Entry?
        for entry in entries where RandomToken.same(entry.pushToken, pushToken) { found = entry }
        return found
    }

    func entries(of application: String) -> [Entry] { entries.filter { $0.application == application } }

    /// A new session with a fresh key and push token.
    func add(application: String, id: String, attributes: JSONValue, timestamp: Double) -> Entry {
        let entry = Entry(key: "\(nextKey)", application: application, id: id, pushToken: RandomToken.make(), attributes: attributes, timestamp: timestamp)
        nextKey += 1
        entries.append(entry)
        return entry
    }

    func remove(_ entry: Entry) {
        entries.removeAll { $0 === entry }
        if primary == entry.key { primary = nil }
        retiredTokens.append(entry.pushToken)
        if retiredTokens.count > Self.retiredTokensKept { retiredTokens.removeFirst() }
    }

    /// Whether `token` was an ended session's (a push to it is answered "unregistered", as APNs does).
    func retired(_ token: String) -> Bool { retiredTokens.reduce(false) { $0 || RandomToken.same($1, token) } }

    /// The attributes' `id`, checked: an object with a string id of 1 to 256 bytes, at most
    /// `maximumAttributes` encoded. The error names what is wrong.
    static func checkedID(of attributes: JSONValue) throws(MediaDeviceError) -> String {
        guard let object = attributes.objectValue else { throw MediaDeviceError(.sessionFailed, "the attributes must be a JSON object") }
        guard let id = object["id"]?.stringValue else { throw MediaDeviceError(.sessionFailed, "the attributes have no \"id\" string") }
        guard !id.isEmpty, id.utf8.count <= 256 else { throw MediaDeviceError(.sessionFailed, "the attributes' \"id\" must be 1 to 256 bytes") }
        let size = JSONWriter.encode(attributes).count
        guard size <= maximumAttributes else {
            throw MediaDeviceError(.sessionFailed, "the attributes take \(size) bytes, more than the \(maximumAttributes) a session may have")
        }
        return id
    }
}
