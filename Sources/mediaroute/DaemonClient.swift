import ArgumentParser
import Foundation
import MediaRouteIPC
import Synchronization

/// The CLI's connection to mediarouted, and its answers to the daemon's pairing questions.
struct DaemonClient {
    let connection: Connection

    /// Connects as role `control`; a missing daemon is a sentence, not an errno.
    static func connect(socket: String?, pairingCode: String? = nil, onPickerChanged: (@Sendable (JSONObject) -> Void)? = nil,
                        onStreamEnded: (@Sendable (JSONObject) -> Void)? = nil) async throws -> DaemonClient {
        let path = socket ?? SocketLocation.defaultPath
        let fd: Int32
        do {
            fd = try UnixSocket.connect(path: path)
        } catch {
            if error.errno == .noSuchFileOrDirectory || error.errno == .connectionRefused {
                throw CLIError("mediarouted is not running (nothing listens on \(path)); start it with `mediarouted --drivers-dir DIR`, or pass --socket PATH")
            }
            throw CLIError("cannot connect to mediarouted at \(path): \(error.errno.description)")
        }
        var handlers = RPCHandlers()
        if let onPickerChanged { handlers.onNotification("picker.changed") { onPickerChanged($0.params) } }
        if let onStreamEnded { handlers.onNotification("stream.ended") { onStreamEnded($0.params) } }
        handlers.onRequest("pairing.request") { request in
            RPCReply(["code": (await PairingPrompt.answer(request.params, code: pairingCode)).map { .string($0) } ?? .null])
        }
        do {
            let connection = try await Connection.open(socket: fd, hello: Hello(role: .control, name: "mediaroute"), side: .initiator(),
                                                       configuration: ConnectionConfiguration(label: "mediarouted"), handlers: handlers)
            return DaemonClient(connection: connection)
        } catch {
            throw CLIError("mediarouted at \(path) did not accept the connection: \(error)")
        }
    }

    /// One request; daemon errors become the CLI's error message, unchanged.
    func call(_ method: String, _ params: JSONObject? = nil, timeout: Duration = .seconds(120)) async throws -> JSONValue {
        try await request(method, params, timeout: timeout).result
    }

    /// The same, for an answer that carries descriptors; no `timeout` means the connection's default.
    func request(_ method: String, _ params: JSONObject? = nil, timeout: Duration? = nil) async throws -> RPCResponse {
        do {
            return try await connection.request(method, params, timeout: timeout)
        } catch let error as RPCError {
            // A --code that could not be right was never sent: that, not the cancelled pairing, is the news.
            if let refusal = PairingPrompt.refusal { throw ValidationError(refusal) }
            throw CLIError(error.message)
        }
    }

    /// Activates `device` (a name or id) unless it already is; activation may ask for a code.
    func activateIfNeeded(_ device: String) async throws {
        let routes = try await call("routes.list").objectValue?["routes"]?.arrayValue ?? []
        let active = routes.contains { route in
            let described = route.objectValue?["device"]?.objectValue
            return described?["displayName"]?.stringValue?.lowercased() == device.lowercased() || described?["id"]?.stringValue == device
        }
        if !active { _ = try await call("device.activate", ["device": .string(device)], timeout: .seconds(600)) }
    }

    func close() async { await connection.close() }
}

/// Asks the person for a pairing code or password, on standard input (a terminal, or a pipe from a
/// script that reads the code off the device). Ctrl-C or the end of input cancels the pairing (the
/// driver is told the person cancelled) instead of killing the CLI mid-activation.
enum PairingPrompt {
    private static let refused = Mutex<String?>(nil)
    /// Why a --code given in advance was not sent (the device asks for something else), if it was not.
    static var refusal: String? { refused.withLock { $0 } }

    /// Why `code` cannot be what `method` asks for, or nil. A code of the wrong form is never sent:
    /// the device would count it as a wrong try, and a few of those lock pairing for minutes.
    static func problem(with code: String, for method: JSONObject?, device: String) -> String? {
        switch method?["type"]?.stringValue {
        case "numericCode":
            let length = Int(method?["length"]?.integerValue ?? 4)
            guard code.count == length, code.allSatisfy({ ("0"..."9").contains($0) }) else {
                return "\(device) asks for a \(length)-digit code; \"\(code)\" is not \(length) digits"
            }
        case "password":
            guard !code.isEmpty else { return "\(device) asks for a password, and it cannot be empty" }
        default:
            break
        }
        return nil
    }

    static func answer(_ params: JSONObject, code: String?) async -> String? {
        let device = params["device"]?.stringValue ?? "the device"
        let reason = params["reason"]?.stringValue ?? "Pairing required"
        let method = params["authorizationMethod"]?.objectValue
        if let code {
            if let problem = problem(with: code, for: method, device: device) {
                refused.withLock { $0 = "--code: \(problem); nothing was sent to it" }
                return nil
            }
            return code
        }
        let prompt: String
        switch method?["type"]?.stringValue {
        case "numericCode": prompt = "\(reason)\nEnter the \(method?["length"]?.integerValue ?? 4)-digit code shown on \(device) (Ctrl-C cancels): "
        case "password": prompt = "\(reason)\nPassword for \(device) (Ctrl-C cancels): "
        default: prompt = "\(reason)\nCode for \(device) (Ctrl-C cancels): "
        }
        guard let interrupt = try? Interrupt() else {
            FileHandle.standardError.write(Data("cannot watch for Ctrl-C while asking for the code; pass it with --code\n".utf8))
            return nil
        }
        // Only now ask: a Ctrl-C typed the moment the prompt shows is already heard.
        FileHandle.standardError.write(Data(prompt.utf8))
        defer { interrupt.restore() }
        while true {
            let line = await interrupt.readLine()
            guard let line, !line.isEmpty else {
                FileHandle.standardError.write(Data((line == nil && isatty(STDIN_FILENO) == 0
                    ? "\nno code on standard input; type it at a terminal, pipe it in, or pass --code\n" : "\npairing cancelled\n").utf8))
                return nil
            }
            guard let problem = problem(with: line, for: method, device: device) else { return line }
            // A typo is not a wrong try: say so and ask again.
            FileHandle.standardError.write(Data("\(problem); try again (Ctrl-C cancels): ".utf8))
        }
    }
}

struct CLIError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
