import MediaRouteIPC

/// Who a NowPlaying extension says it is in `hello.identity` (§11.6): the extension point it
/// serves and the app whose remote sessions it makes.
package struct ExtensionIdentity: Codable, Sendable {
    package static let remoteMediaExtensionPoint = "org.mediaroute.nowplaying.remote-media"
    package let name: String
    package let extensionPoint: String
    package let application: String
    package let pid: Int32?

    package init(name: String, extensionPoint: String, application: String, pid: Int32) {
        (self.name, self.extensionPoint, self.application, self.pid) = (name, extensionPoint, application, pid)
    }

    package var object: JSONObject { WireEncoder.encode(self).objectValue ?? [:] }

    package init(_ identity: JSONObject) throws(RPCError) {
        do { self = try WireDecoder.decode(Self.self, from: .object(identity)) } catch {
            throw RPCError(.invalidParams, "hello: identity: \(error)")
        }
    }
}

/// What the supervisor asks of a NowPlaying extension (role `extension`, on descriptor 3, §11.6).
/// `session` is the supervisor's key for a session, stable across the extension's restarts.
package enum ToExtension {
    /// Make the session for these attributes (`session(_:)`), and say what it shows.
    package struct Session: WireRequest {
        package struct Made: Codable, Sendable {
            package let state: RemoteSessionState
            package init(state: RemoteSessionState) { self.state = state }
        }
        package typealias Result = Made
        package static let method = "remote.session"
        package let session: String
        package let attributes: JSONValue
        /// The session's push token, in hex: what the extension's `pushToken` reads.
        package let pushToken: String
        package init(session: String, attributes: JSONValue, pushToken: String) { (self.session, self.attributes, self.pushToken) = (session, attributes, pushToken) }
    }

    /// New attributes for a session (`update(_:)`).
    package struct Update: WireRequest {
        package typealias Result = NoResult
        package static let method = "remote.update"
        package let session: String
        package let attributes: JSONValue
        package init(session: String, attributes: JSONValue) { (self.session, self.attributes) = (session, attributes) }
    }

    /// The session ended: the extension lets it go.
    package struct End: WireRequest {
        package typealias Result = NoResult
        package static let method = "remote.end"
        package let session: String
        package init(session: String) { self.session = session }
    }

    /// A command from the desktop's media controls (or the operator) for a session.
    package struct Command: WireRequest {
        package enum Kind: String, Codable, Sendable { case play, pause, togglePlayPause, stop, next, previous, seekToPosition, setVolume, increaseVolume, decreaseVolume }
        package typealias Result = NoResult
        package static let method = "remote.command"
        package let session: String
        package let command: Kind
        /// Seconds, for `seekToPosition`.
        package let position: Double?
        /// Which device, for the volume commands (the first with that control when absent).
        package let device: String?
        /// 0…1, for `setVolume`.
        package let volume: Double?
        package init(session: String, command: Kind, position: Double? = nil, device: String? = nil, volume: Double? = nil) {
            (self.session, self.command, self.position, self.device, self.volume) = (session, command, position, device, volume)
        }
    }

    /// The picture of an artwork the session shows, at about this size.
    package struct Artwork: WireRequest {
        package struct Picture: Codable, Sendable {
            package let data: Base64Payload
            package init(data: Base64Payload) { self.data = data }
        }
        package typealias Result = Picture
        package static let method = "remote.artwork"
        package let session: String
        package let artwork: String
        package let width: Int
        package let height: Int
        package init(session: String, artwork: String, width: Int, height: Int) { (self.session, self.artwork, self.width, self.height) = (session, artwork, width, height) }
    }
}

/// What a NowPlaying extension tells the supervisor (§11.6).
package enum FromExtension {
    /// A session shows something else: sent when what its representable returns changes.
    package struct State: WireNotification {
        package static let method = "remote.state"
        package let session: String
        package let state: RemoteSessionState
        package init(session: String, state: RemoteSessionState) { (self.session, self.state) = (session, state) }
    }
}

/// An app's remote media sessions as the supervisor holds them.
package struct RemoteSessionRecord: Codable, Sendable {
    package let id: String
    package let attributes: JSONValue
    package let pushToken: String
    package init(id: String, attributes: JSONValue, pushToken: String) { (self.id, self.attributes, self.pushToken) = (id, attributes, pushToken) }
}

/// The app's methods for remote media sessions (role `app`, §11.6).
extension App {
    package struct StartRemoteSession: WireRequest {
        package typealias Result = RemoteSessionRecord
        package static let method = "remote.start"
        package let attributes: JSONValue
        package init(attributes: JSONValue) { self.attributes = attributes }
    }

    package struct UpdateRemoteSession: WireRequest {
        package typealias Result = NoResult
        package static let method = "remote.update"
        package let id: String
        package let attributes: JSONValue
        package init(id: String, attributes: JSONValue) { (self.id, self.attributes) = (id, attributes) }
    }

    package struct EndRemoteSession: WireRequest {
        package typealias Result = NoResult
        package static let method = "remote.end"
        package let id: String
        package init(id: String) { self.id = id }
    }

    package struct RemoteSessions: WireRequest {
        package struct List: Codable, Sendable {
            package let sessions: [RemoteSessionRecord]
            package init(sessions: [RemoteSessionRecord]) { self.sessions = sessions }
        }
        package typealias Result = List
        package static let method = "remote.sessions"
        package init() {}
    }

    package struct BecomeSystemPrimary: WireRequest {
        package typealias Result = NoResult
        package static let method = "remote.primary"
        package let id: String
        package init(id: String) { self.id = id }
    }

    package struct PushToStartToken: WireRequest {
        package struct Token: Codable, Sendable {
            package let token: String
            package init(token: String) { self.token = token }
        }
        package typealias Result = Token
        package static let method = "remote.pushToStartToken"
        package init() {}
    }
}

extension ToApp {
    /// The app's push-to-start token changed (the operator rotated it).
    package struct PushToStartTokenChanged: WireNotification {
        package static let method = "remote.pushToStartToken.changed"
        package let token: String
        package init(token: String) { self.token = token }
    }
}

/// What plays where, for `mediaroute nowplaying`: every remote session and every route session.
extension Control {
    package struct NowPlaying: WireRequest {
        package struct Entry: Codable, Sendable {
            package enum Kind: String, Codable, Sendable { case remote, route }
            package let kind: Kind
            /// The application that published a remote session, or that started a route session.
            package let application: String?
            /// A remote session's id, or a route session's.
            package let id: String
            package let title: String?
            package let artist: String?
            /// `playing`, `paused`, `buffering`, `interrupted` or `stopped`.
            package let status: String
            package let position: Double?
            package let duration: Double?
            package let devices: [String]
            /// The commands a remote session takes now.
            package let commands: [String]
            package let systemPrimary: Bool
            package let pushToken: String?
            /// Its MPRIS bus name, when shown on a session bus.
            package let mprisName: String?
            package init(kind: Kind, application: String?, id: String, title: String?, artist: String?, status: String, position: Double?, duration: Double?,
                         devices: [String], commands: [String], systemPrimary: Bool, pushToken: String?, mprisName: String?) {
                (self.kind, self.application, self.id, self.title, self.artist, self.status, self.position, self.duration) =
                    (kind, application, id, title, artist, status, position, duration)
                (self.devices, self.commands, self.systemPrimary, self.pushToken, self.mprisName) = (devices, commands, systemPrimary, pushToken, mprisName)
            }
        }
        package struct List: Codable, Sendable {
            package let sessions: [Entry]
            package init(sessions: [Entry]) { self.sessions = sessions }
        }
        package typealias Result = List
        package static let method = "nowplaying.list"
        package init() {}
    }
}

extension ToExtension.Command.Kind {
    /// The command a session must enable for this to reach it; volume goes by its devices.
    package var needs: RemoteCommandName? {
        switch self {
        case .play: .play
        case .pause: .pause
        case .togglePlayPause: .togglePlayPause
        case .stop: .stop
        case .next: .next
        case .previous: .previous
        case .seekToPosition: .seekToPosition
        case .setVolume, .increaseVolume, .decreaseVolume: nil
        }
    }
}
