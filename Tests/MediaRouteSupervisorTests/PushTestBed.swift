import Foundation
import Glibc
import MediaRouteIPC
import MediaRouteSupervisor
import PrivateDaemons
import Synchronization
import Testing
import TestSupport

/// A push endpoint run in-process on a free loopback port, with two apps' credentials and a
/// delivery that records what reaches it; hit with the real `curl`.
final class PushTestBed: Sendable {
    static let app = "org.example.player"
    static let otherApp = "org.example.radio"
    static let token = "0123456789ABCDEF0123456789abcdef"

    let directory: String
    let endpoint: PushEndpoint
    let credential: String
    let otherCredential: String
    private let recorder: Recorder

    var pushes: [PushRequest] { recorder.pushes.withLock { $0 } }
    var url: String { "http://\(endpoint.address)/3/device/\(Self.token)" }

    private init(directory: String, endpoint: PushEndpoint, credentials: (String, String), recorder: Recorder) {
        self.directory = directory
        self.endpoint = endpoint
        (credential, otherCredential) = credentials
        self.recorder = recorder
    }

    /// A bed for `body`, stopped afterwards (its connections closed, its directory removed).
    static func run(limits: PushEndpoint.Limits = PushEndpoint.Limits(), _ body: (PushTestBed) async throws -> Void) async throws {
        let directory = NSTemporaryDirectory() + "mediaroute-push-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let credentials = PushCredentials(stateDirectory: directory)
        let pair = (try credentials.credential(for: app), try credentials.credential(for: otherApp))
        let recorder = Recorder()
        let endpoint: PushEndpoint
        do {
            endpoint = try await PushEndpoint.start(at: PushListenAddress(host: "127.0.0.1", port: 0), credentials: credentials, limits: limits,
                                                    logger: LogCapture().logger) { push throws(PushRefusal) in recorder.record(push) }
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
        let bed = PushTestBed(directory: directory, endpoint: endpoint, credentials: pair, recorder: recorder)
        try await withTearDown { try await body(bed) } tearDown: {
            await endpoint.stop()
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    /// What the delivery was given, from NIO's threads.
    private final class Recorder: Sendable {
        let pushes = Mutex<[PushRequest]>([])
        func record(_ push: PushRequest) { pushes.withLock { $0.append(push) } }
    }

    /// The headers a server sends, `authorization` with the app's credential.
    var serverHeaders: [String: String] {
        ["apns-topic": "\(Self.app).push-type.nowplaying", "apns-push-type": "nowplaying", "authorization": "bearer \(credential)"]
    }

    /// One answer, as curl printed it (`-i`).
    struct Answer: CustomStringConvertible {
        let status: Int
        let headers: [String: String]
        let body: String
        var json: JSONObject? { (try? JSONReader.parse(Array(body.utf8)))?.objectValue }
        var reason: String? { json?["reason"]?.stringValue }
        var message: String { json?["message"]?.stringValue ?? "" }
        var description: String { "\(status) \(body)" }
    }

    /// `curl -i` with `arguments` after the usual ones; what it printed, read as one answer.
    func curl(_ arguments: [String]) async throws -> Answer {
        let run = try await CapturedCommand.run("/usr/bin/curl", ["-sS", "-i", "--http1.1", "--max-time", "10"] + arguments, timeout: .seconds(20))
        #expect(run.succeeded, "curl: \(run.output)")
        let parts = run.output.components(separatedBy: "\r\n\r\n")
        let head = parts[0].components(separatedBy: "\r\n")
        let status = head[0].split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? -1
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return Answer(status: status, headers: headers, body: parts.dropFirst().joined(separator: "\r\n\r\n"))
    }

    /// POSTs `body` to `path` with `headers` (nil values left out).
    func post(_ body: String, headers: [String: String?], path: String? = nil, method: String = "POST") async throws -> Answer {
        var arguments = ["-X", method]
        for (name, value) in headers { if let value { arguments += ["-H", "\(name): \(value)"] } }
        if !body.isEmpty { arguments += ["--data-binary", body] }
        return try await curl(arguments + [path.map { "http://\(endpoint.address)\($0)" } ?? url])
    }

    /// A payload `{"aps": {...}}`.
    static func payload(event: String = "start", timestamp: String = "1700000000", attributes: String = #"{"id": "s1", "title": "Blue in Green"}"#) -> String {
        #"{"aps": {"event": "\#(event)", "timestamp": \#(timestamp), "attributes": \#(attributes)}}"#
    }

    /// Opens a raw TCP connection to the endpoint, sends `bytes`, and reads until it closes or
    /// `seconds` pass.
    func raw(_ bytes: [UInt8], reading seconds: Int = 10) async throws -> String {
        let fd = try await TCPSocket.connect(host: endpoint.address.host, port: UInt16(endpoint.address.port), timeout: .seconds(5))
        return try await onThreadOfItsOwn {
            defer { close(fd) }
            _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            return Self.read(fd, seconds: seconds) { _ in false }
        }
    }

    /// Opens a connection, pushes over it (so the endpoint has surely taken it in) and keeps it open
    /// until `body` returns.
    func holdingConnection<T>(_ body: () async throws -> T) async throws -> T {
        let fd = try await TCPSocket.connect(host: endpoint.address.host, port: UInt16(endpoint.address.port), timeout: .seconds(5))
        defer { close(fd) }
        let payload = Self.payload()
        let request = "POST /3/device/\(Self.token) HTTP/1.1\r\nhost: x\r\n" + serverHeaders.map { "\($0.key): \($0.value)\r\n" }.joined()
            + "content-length: \(payload.utf8.count)\r\n\r\n" + payload
        let answer = try await onThreadOfItsOwn {
            _ = Array(request.utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            return Self.read(fd, seconds: 10) { $0.contains("\r\n\r\n") }
        }
        #expect(answer.hasPrefix("HTTP/1.1 200"), "\(answer)")
        return try await body()
    }

    /// Reads until the connection closes, `seconds` pass, or what came is `enough`.
    static func read(_ fd: Int32, seconds: Int, enough: (String) -> Bool) -> String {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, 100) >= 0 || errno == EINTR else { break }
            let count = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if count > 0 {
                received += buffer[0..<count]
                if enough(String(decoding: received, as: UTF8.self)) { break }
                continue
            }
            if count == 0 || (errno != EAGAIN && errno != EINTR) { break }
        }
        return String(decoding: received, as: UTF8.self)
    }
}
