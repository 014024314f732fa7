import Foundation
import MediaDevice
import MediaRouteIPC

/// A driver's manifest (`*.json` in a drivers directory): which protocol it serves, the type it
/// exports, the program to run, and how the supervisor treats it. Format: README, "Driver manifests".
public struct DriverManifest: Sendable, Hashable {
    public let path: String
    public let protocolID: String
    /// The exported type's description: the name the picker shows for this protocol.
    public let displayName: String
    public let executable: String
    public let arguments: [String]
    /// Added to the supervisor's environment for this driver (e.g. SWIFT_BACKTRACE, log levels).
    public let environment: [String: String]
    public let restart: RestartPolicy
    public let timeouts: Timeouts

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

        var restart = RestartPolicy()
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
        var timeouts = Timeouts()
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
        self.protocolID = protocolID
        self.displayName = displayName
        self.executable = resolved
        self.arguments = arguments
        self.environment = environment
        self.restart = restart
        self.timeouts = timeouts
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
                        problems.append(Problem(path: manifest.path, reason: "protocol \(manifest.protocolID) is already served by \(earlier.path)"))
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
