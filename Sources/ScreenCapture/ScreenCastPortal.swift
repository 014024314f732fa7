import DBus
import Glibc
import Synchronization

/// The conversation with xdg-desktop-portal's ScreenCast interface that gives a Wayland screen as
/// a PipeWire stream: CreateSession, SelectSources (one monitor), Start (where the desktop asks the
/// person which screen to share, and whether to), OpenPipeWireRemote; `close` ends the session.
/// Each request answers by a `Response` signal on its own Request object, subscribed before the call.
public actor ScreenCastPortal {
    public static let busName = "org.freedesktop.portal.Desktop"
    static let path: DBusObjectPath = "/org/freedesktop/portal/desktop"
    static let interface = "org.freedesktop.portal.ScreenCast"

    /// A stream the portal started: its PipeWire node, and the screen's size when the portal says it.
    public struct Stream: Sendable, Hashable {
        public var node: UInt32
        public var width: Int?
        public var height: Int?
    }

    public nonisolated let connection: DBusConnection
    /// The session's object, once CreateSession has answered.
    public private(set) var session: DBusObjectPath?
    private var requests = 0
    private let token = "mediaroute\(getpid())"

    public init(connection: DBusConnection) { self.connection = connection }

    /// The ScreenCast interface's version; fails with a sentence when there is no portal on the bus
    /// or it has no ScreenCast interface (no backend for this desktop offers one).
    public func version() async throws(ScreenCaptureError) -> UInt32 {
        do {
            let value = try await connection.property("version", of: Self.interface, at: Self.path, on: Self.busName)
            return value.uint32 ?? 0
        } catch {
            throw Self.explain(error, doing: "asking for its ScreenCast version")
        }
    }

    /// CreateSession: the portal's session object, which Start and OpenPipeWireRemote name.
    public func createSession() async throws(ScreenCaptureError) {
        _ = try await version()
        let results = try await request("CreateSession", [], options: ["session_handle_token": .string("\(token)session")])
        guard let handle = results["session_handle"]?.string ?? results["session_handle"]?.objectPath?.rawValue else {
            throw ScreenCaptureError("the ScreenCast portal created a session but did not say its handle")
        }
        session = DBusObjectPath(handle)
    }

    /// SelectSources: one monitor, the cursor drawn into the frames when the portal can.
    public func selectSources() async throws(ScreenCaptureError) {
        let session = try openSession()
        let types = (try? await connection.property("AvailableSourceTypes", of: Self.interface, at: Self.path, on: Self.busName))?.uint32 ?? 1
        guard types & 1 != 0 else { throw ScreenCaptureError("the ScreenCast portal offers no monitor to share (AvailableSourceTypes \(types))") }
        var options: [String: DBusValue] = ["types": .uint32(1), "multiple": .boolean(false)]
        let cursors = (try? await connection.property("AvailableCursorModes", of: Self.interface, at: Self.path, on: Self.busName))?.uint32 ?? 0
        if cursors & 2 != 0 { options["cursor_mode"] = .uint32(2) }
        _ = try await request("SelectSources", [.objectPath(session)], options: options)
    }

    /// Start: the desktop asks the person (no answer time limit: they may take their time); the
    /// streams they granted.
    public func start() async throws(ScreenCaptureError) -> [Stream] {
        let session = try openSession()
        let results = try await request("Start", [.objectPath(session), .string("")], options: [:], timeout: .seconds(3600))
        let streams = (results["streams"]?.array ?? []).compactMap { entry -> Stream? in
            guard case .structure(let members) = Self.unwrapped(entry), members.count == 2, let node = members[0].uint32 else { return nil }
            var stream = Stream(node: node)
            if let size = members[1].properties?["size"], case .structure(let size) = Self.unwrapped(size), size.count == 2 {
                (stream.width, stream.height) = (size[0].int32.map(Int.init), size[1].int32.map(Int.init))
            }
            return stream
        }
        guard !streams.isEmpty else { throw ScreenCaptureError("the ScreenCast portal started but granted no stream") }
        return streams
    }

    /// OpenPipeWireRemote: a connection to PipeWire that sees only the granted streams.
    public func openPipeWireRemote() async throws(ScreenCaptureError) -> Int32 {
        let session = try openSession()
        let reply: [DBusValue]
        do {
            reply = try await connection.call(destination: Self.busName, path: Self.path, interface: Self.interface, method: "OpenPipeWireRemote",
                                              [.objectPath(session), .properties([:])])
        } catch {
            throw Self.explain(error, doing: "OpenPipeWireRemote")
        }
        guard let fd = reply.first?.fileDescriptor?.take() else {
            throw ScreenCaptureError("the ScreenCast portal's OpenPipeWireRemote gave no file descriptor")
        }
        return fd
    }

    /// Ends the session (the compositor stops the stream). Safe to call twice.
    public func close() async {
        guard let session else { return }
        self.session = nil
        _ = try? await connection.call(destination: Self.busName, path: session, interface: "org.freedesktop.portal.Session", method: "Close",
                                       timeout: .seconds(5))
    }

    private func openSession() throws(ScreenCaptureError) -> DBusObjectPath {
        guard let session else { throw ScreenCaptureError("the ScreenCast portal session is not created (or already closed)") }
        return session
    }

    /// Calls `method` with `options` (plus our handle token) and returns the results of its Request's
    /// Response; a response other than 0 throws its meaning.
    private func request(_ method: String, _ arguments: [DBusValue], options: [String: DBusValue],
                         timeout: Duration = .seconds(60)) async throws(ScreenCaptureError) -> [String: DBusValue] {
        requests += 1
        let handleToken = "\(token)r\(requests)"
        let sender = String(connection.uniqueName.dropFirst().map { $0 == "." ? "_" : $0 })
        let expected = DBusObjectPath("\(Self.path.rawValue)/request/\(sender)/\(handleToken)")
        let responses: AsyncStream<DBusSignal>
        do {
            responses = try await connection.signals(matching: DBusMatchRule(path: expected, interface: "org.freedesktop.portal.Request", member: "Response"))
            var withToken = options
            withToken["handle_token"] = .string(handleToken)
            let reply = try await connection.call(destination: Self.busName, path: Self.path, interface: Self.interface, method: method,
                                                  arguments + [.properties(withToken)])
            if let handle = reply.first?.objectPath, handle != expected {
                throw ScreenCaptureError("the ScreenCast portal answered \(method) on \(handle.rawValue), not the request object \(expected.rawValue) it was asked for (a portal older than version 0.9)")
            }
        } catch let error as ScreenCaptureError {
            throw error
        } catch {
            throw Self.explain(error as? DBusError ?? DBusError(name: DBusError.failed, message: "\(error)"), doing: method)
        }
        let response = await Self.first(of: responses, within: timeout)
        guard let response else {
            throw ScreenCaptureError("the ScreenCast portal did not answer \(method) within \(timeout) (or the session bus went away)")
        }
        let code = response.arguments.first?.uint32 ?? 2
        let results = response.arguments.dropFirst().first?.properties ?? [:]
        switch code {
        case 0: return results
        case 1: throw ScreenCaptureError("the person declined to share the screen in the desktop's dialog (the ScreenCast portal's \(method) answered 1, cancelled)")
        default:
            let reason = results.compactMap { key, value in value.string.map { "\(key): \($0)" } }.sorted().joined(separator: "; ")
            throw ScreenCaptureError("the ScreenCast portal could not \(method == "Start" ? "start the screencast" : "do \(method)") (response \(code), the interaction ended otherwise)"
                + (reason.isEmpty ? "; the portal gave no reason (its backend's log may say why)" : ": \(reason)"))
        }
    }

    private static func unwrapped(_ value: DBusValue) -> DBusValue { if case .variant(let inner) = value { inner } else { value } }

    private static func first(of signals: AsyncStream<DBusSignal>, within limit: Duration) async -> DBusSignal? {
        await withTaskGroup(of: DBusSignal?.self) { group in
            group.addTask { for await signal in signals { return signal }; return nil }
            group.addTask { try? await Task.sleep(for: limit); return nil }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }

    static func explain(_ error: DBusError, doing what: String) -> ScreenCaptureError {
        switch error.name {
        case DBusError.serviceUnknown, DBusError.nameHasNoOwner:
            ScreenCaptureError("there is no xdg-desktop-portal on the session bus (\(busName) is not there and cannot be started), so a Wayland screen cannot be shared: install xdg-desktop-portal and the backend for this desktop (xdg-desktop-portal-gnome, -kde or -wlr)")
        case DBusError.unknownInterface, DBusError.unknownMethod, DBusError.unknownProperty, DBusError.invalidArgs, DBusError.unknownObject:
            ScreenCaptureError("the desktop portal has no ScreenCast interface (no backend for this desktop offers screen sharing; for sway and other wlroots compositors install xdg-desktop-portal-wlr): \(error)")
        default:
            ScreenCaptureError("the ScreenCast portal failed while \(what): \(error)")
        }
    }
}

extension ScreenCastPortal {
    /// The whole conversation on the session bus, ending in a PipeWire stream of the granted screen;
    /// closing the stream closes the portal's session and the bus connection.
    static func openStream() async throws(ScreenCaptureError) -> PipeWireScreenStream {
        let connection: DBusConnection
        do { connection = try await DBusConnection.session() } catch {
            throw ScreenCaptureError("a Wayland screen is shared through xdg-desktop-portal on the session bus, which cannot be reached: \(error)")
        }
        let portal = ScreenCastPortal(connection: connection)
        // Session.Close is sent on a task of its own, which nothing waits for: the stream is closed
        // from synchronous code (a capture thread, `deinit`, a session's `stop`) that must not block
        // on the bus. Its answer is awaited there (bounded), then the connection closes, which ends
        // the portal's session too if the Close was lost (the process quit meanwhile).
        let finish: @Sendable () -> Void = {
            Task {
                await portal.close()
                await connection.close()
            }
        }
        do {
            try await portal.createSession()
            try await portal.selectSources()
            let streams = try await portal.start()
            let remote = try await portal.openPipeWireRemote()
            return try PipeWireScreenStream(remote: remote, node: streams[0].node, onClose: finish)
        } catch {
            await portal.close()
            await connection.close()
            throw error
        }
    }
}
