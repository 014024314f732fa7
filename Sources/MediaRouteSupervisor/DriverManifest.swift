import Foundation
import MediaDevice
import MediaRouteIPC

/// A driver's manifest (`*.json` in a drivers directory): which protocol it serves, the type it
/// exports, the program to run, and how the supervisor treats it. Format: README, "Driver manifests".
///
/// A NowPlaying extension has a manifest of the same shape naming its extension point and app
/// instead of a protocol: it is supervised exactly as a driver is (started on demand, heartbeats,
/// restarts within a budget, `mediaroute drivers`), and only what it is asked differs.
public struct DriverManifest: Sendable, Hashable {
    public enum Kind: Sendable, Hashable {
        case protocolDriver
        /// Makes the remote media sessions of `application` (its `extensionPoint` is
        /// `org.mediaroute.nowplaying.remote-media`).
        case remoteMediaExtension(application: String)
    }

    public let path: String
    public let kind: Kind
    /// The protocol a driver serves; an extension's own `identifier`. Unique among manifests.
    public let protocolID: String
    /// The exported type's description: the name the picker shows for this protocol (an
    /// extension's `description`).
    public let displayName: String
    public let executable: String
    public let arguments: [String]
    /// Added to the supervisor's environment for this driver (e.g. SWIFT_BACKTRACE, log levels),
    /// with the daemon configuration's additions once `configured(by:)`.
    public internal(set) var environment: [String: String]
    /// In force: the built-in defaults with the manifest's own settings over them, and the daemon
    /// configuration's layers once `configured(by:)`.
    public internal(set) var restart: RestartPolicy
    public internal(set) var timeouts: Timeouts
    /// What the manifest itself says, before any configuration.
    public let declaredRestart: RestartSettings
    public let declaredTimeouts: TimeoutSettings
    public let declaredEnvironment: [String: String]

    public struct Timeouts: Sendable, Hashable {
        public var request: Duration = .seconds(10)
        public var heartbeatInterval: Duration = .seconds(5)
        public var heartbeatTimeout: Duration = .seconds(2)
        /// How long a driver with nothing to do (no picker open, no active route) keeps running.
        public var idleExit: Duration = .seconds(30)
    }

    /// Why a manifest is refused: the sentence names the file and the member.
    public struct Problem: Error, Sendable, Hashable, CustomStringConvertible {
        public let path: String
        public let reason: String
        public var description: String { "\(path): \(reason)" }
    }

    /// Reads and checks a manifest, including that the protocol is named the same in `protocol`
    /// and `exportedType.identifier`, and that the type conforms to public.media-sharing-protocol.
    public init(path: String) throws(Problem) {
        func problem(_ reason: String) -> Problem { Problem(path: path, reason: reason) }
        guard let data = FileManager.default.contents(atPath: path) else { throw problem("cannot be read") }
        let json: JSONValue
        do { json = try JSONReader.parse(Array(data)) } catch { throw problem("is not valid JSON: \(error)") }
        guard let object = json.objectValue else { throw problem("must be a JSON object") }

        let kind: Kind, protocolID: String, displayName: String
        if object["extensionPoint"] != nil {
            (kind, protocolID, displayName) = try Self.extensionIdentity(object, problem)
        } else {
            (kind, protocolID, displayName) = try Self.driverIdentity(object, problem)
        }
        guard let executable = object["executable"]?.stringValue, !executable.isEmpty else { throw problem("\"executable\" must be a path") }
        let directory = (path as NSString).deletingLastPathComponent
        let resolved = executable.hasPrefix("/") ? executable : (directory as NSString).appendingPathComponent(executable)
        guard FileManager.default.isExecutableFile(atPath: resolved) else { throw problem("\"executable\" \(resolved) is not an executable file") }
        let arguments = object["arguments"]?.arrayValue?.compactMap(\.stringValue) ?? []
        var environment: [String: String] = [:]
        for member in object["environment"]?.objectValue?.members ?? [] {
            guard let value = member.value.stringValue, !member.key.isEmpty, !member.key.contains("=") else {
                throw problem("\"environment\" must map variable names to strings")
            }
            environment[member.key] = value
        }

        var restart = RestartSettings()
        if let r = object["restart"]?.objectValue {
            func positive(_ key: String) throws(Problem) -> Int64? {
                guard let value = r[key] else { return nil }
                guard let n = value.integerValue, n > 0 else { throw problem("\"restart.\(key)\" must be a positive integer") }
                return n
            }
            if let n = try positive("intensity") { restart.intensity = Int(n) }
            if let n = try positive("periodSeconds") { restart.period = .seconds(n) }
            if let n = try positive("initialBackoffMilliseconds") { restart.initialBackoff = .milliseconds(n) }
            if let n = try positive("maximumBackoffMilliseconds") { restart.maximumBackoff = .milliseconds(n) }
        }
        var timeouts = TimeoutSettings()
        if let t = object["timeouts"]?.objectValue {
            func milliseconds(_ key: String) throws(Problem) -> Duration? {
                guard let value = t[key] else { return nil }
                guard let n = value.integerValue, n > 0, n <= 3_600_000 else { throw problem("\"timeouts.\(key)\" must be 1 to 3600000 milliseconds") }
                return .milliseconds(n)
            }
            if let d = try milliseconds("requestMilliseconds") { timeouts.request = d }
            if let d = try milliseconds("heartbeatIntervalMilliseconds") { timeouts.heartbeatInterval = d }
            if let d = try milliseconds("heartbeatTimeoutMilliseconds") { timeouts.heartbeatTimeout = d }
            if let d = try milliseconds("idleExitMilliseconds") { timeouts.idleExit = d }
        }
        self.path = path
        self.kind = kind
        self.protocolID = protocolID
        self.displayName = displayName
        self.executable = resolved
        self.arguments = arguments
        self.environment = environment
        self.restart = restart.applied(to: RestartPolicy())
        self.timeouts = timeouts.applied(to: Timeouts())
        self.declaredEnvironment = environment
        self.declaredRestart = restart
        self.declaredTimeouts = timeouts
    }

    /// A driver's three names of its protocol, checked to agree (two here, the third at the handshake).
    private static func driverIdentity(_ object: JSONObject, _ problem: (String) -> Problem) throws(Problem) -> (Kind, String, String) {
        guard let protocolID = object["protocol"]?.stringValue, UTType(exportedAs: protocolID).isWellFormed else {
            throw problem("\"protocol\" must be a reverse-DNS identifier such as org.example.protocol")
        }
        guard let exported = object["exportedType"]?.objectValue else { throw problem("\"exportedType\" must be an object") }
        guard let identifier = exported["identifier"]?.stringValue else { throw problem("\"exportedType.identifier\" must be a string") }
        guard identifier == protocolID else {
            throw problem("\"exportedType.identifier\" is \"\(identifier)\" but \"protocol\" is \"\(protocolID)\"; the three names of a protocol must agree")
        }
        let conforms = exported["conformsTo"]?.arrayValue?.compactMap(\.stringValue) ?? []
        guard conforms.contains(UTType.mediaSharingProtocol.identifier) else {
            throw problem("\"exportedType.conformsTo\" must contain \"\(UTType.mediaSharingProtocol.identifier)\"")
        }
        guard let displayName = exported["description"]?.stringValue, !displayName.isEmpty, displayName.count <= 64 else {
            throw problem("\"exportedType.description\" (the picker's name for the protocol) must be 1 to 64 characters")
        }
        return (.protocolDriver, protocolID, displayName)
    }

    /// A NowPlaying extension's extension point, own identifier and app.
    private static func extensionIdentity(_ object: JSONObject, _ problem: (String) -> Problem) throws(Problem) -> (Kind, String, String) {
        let point = ExtensionIdentity.remoteMediaExtensionPoint
        guard object["extensionPoint"]?.stringValue == point else { throw problem("\"extensionPoint\" must be \"\(point)\", the only one there is") }
        guard let identifier = object["identifier"]?.stringValue, UTType(exportedAs: identifier).isWellFormed else {
            throw problem("\"identifier\" must be a reverse-DNS identifier naming the extension, such as org.example.player.nowplaying")
        }
        guard let application = object["application"]?.stringValue, PushRequest.isApplicationIdentifier(application) else {
            throw problem("\"application\" must name the app whose remote sessions the extension makes (its applicationIdentifier: 1 to 255 bytes, without spaces or control characters)")
        }
        guard let displayName = object["description"]?.stringValue, !displayName.isEmpty, displayName.count <= 64 else {
            throw problem("\"description\" must be 1 to 64 characters")
        }
        return (.remoteMediaExtension(application: application), identifier, displayName)
    }

    /// Every `*.json` manifest in `directories`, in name order; refused ones are returned as problems.
    public static func load(from directories: [String]) -> (manifests: [DriverManifest], problems: [Problem]) {
        var manifests: [DriverManifest] = [], problems: [Problem] = []
        for directory in directories {
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else {
                problems.append(Problem(path: directory, reason: "drivers directory cannot be read"))
                continue
            }
            for name in names.sorted() where name.hasSuffix(".json") {
                do {
                    let manifest = try DriverManifest(path: (directory as NSString).appendingPathComponent(name))
                    if let earlier = manifests.first(where: { $0.protocolID == manifest.protocolID }) {
                        problems.append(Problem(path: manifest.path, reason: "\(manifest.protocolID) is already served by \(earlier.path)"))
                    } else if case .remoteMediaExtension(let application) = manifest.kind,
                              let earlier = manifests.first(where: { $0.kind == manifest.kind }) {
                        problems.append(Problem(path: manifest.path, reason: "the remote sessions of \(application) are already made by the extension of \(earlier.path)"))
                    } else {
                        manifests.append(manifest)
                    }
                } catch {
                    problems.append(error)
                }
            }
        }
        return (manifests, problems)
    }
}

extension DriverManifest {
    /// The role its process takes in `hello`.
    var role: Hello.Role { kind == .protocolDriver ? .driver : .extension }

    /// What to call it in logs and errors.
    var kindName: String { kind == .protocolDriver ? "driver" : "extension" }

    /// Checks the identity a process gives in `hello` against this manifest: a driver's third name
    /// of its protocol, an extension's app.
    package func check(_ identity: JSONObject) throws(RPCError) {
        switch kind {
        case .protocolDriver:
            let identity = try DriverIdentity(identity)
            guard identity.protocol == protocolID else {
                throw RPCError(.identityMismatch, "the driver at \(executable) says its protocol is \"\(identity.protocol)\" but its manifest \(path) says \"\(protocolID)\"; the three names of a protocol must agree")
            }
        case .remoteMediaExtension(let application):
            let identity = try ExtensionIdentity(identity)
            guard identity.extensionPoint == ExtensionIdentity.remoteMediaExtensionPoint, identity.application == application else {
                throw RPCError(.identityMismatch, "the extension at \(executable) says it makes the remote sessions of \"\(identity.application)\" (extension point \(identity.extensionPoint)) but its manifest \(path) says \"\(application)\"; they must agree")
            }
        }
    }
}
