import ArgumentParser
import Foundation
import MediaRouteIPC
import MediaRouteWire

/// The CLI's connection to mediarouted, and its answers to the daemon's pairing questions.
struct DaemonClient {
    let connection: Connection

    /// Connects as role `control`; a missing daemon is a sentence, not an errno.
    static func connect(socket: String?, pairingCode: String? = nil, onPickerChanged: (@Sendable (Control.PickerChanged) -> Void)? = nil,
                        onStreamEnded: (@Sendable (Streams.Ended) -> Void)? = nil) async throws -> DaemonClient {
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
        if let onPickerChanged { handlers.on(Control.PickerChanged.self, invalid: warn, onPickerChanged) }
        if let onStreamEnded { handlers.on(Streams.Ended.self, invalid: warn, onStreamEnded) }
        handlers.on(Control.PairingRequest.self) { request, _ in
            Control.PairingRequest.Answer(code: await PairingPrompt.answer(request, code: pairingCode))
        }
        do {
            let connection = try await Connection.open(socket: fd, hello: Hello(role: .control, name: "mediaroute"), side: .initiator(),
                                                       configuration: ConnectionConfiguration(label: "mediarouted"), handlers: handlers)
            return DaemonClient(connection: connection)
        } catch {
            throw CLIError("mediarouted at \(path) did not accept the connection: \(error)")
        }
    }

    /// A notification that does not decode is said, not dropped: the daemon and this CLI disagree.
    private static let warn: @Sendable (RPCError) -> Void = { error in
        FileHandle.standardError.write(Data("mediaroute: ignored a notification that does not decode: \(error.message)\n".utf8))
    }

    /// One request, and its typed answer; daemon errors become the CLI's error message, unchanged
    /// (an answer that does not decode names the method and the member).
    func call<Request: WireRequest>(_ request: Request, timeout: Duration = .seconds(120)) async throws -> Request.Result {
        do {
            return try await connection.call(request, timeout: timeout)
        } catch let error as RPCError {
            throw failure(error)
        }
    }

    /// The same, for an answer that carries descriptors (with the connection's default timeout).
    func callReceivingDescriptors<Request: WireRequest>(_ request: Request) async throws -> (Request.Result, ReceivedDescriptors) {
        do {
            return try await connection.callReceivingDescriptors(request)
        } catch let error as RPCError {
            throw failure(error)
        }
    }

    private func failure(_ error: RPCError) -> any Error {
        // A --code that could not be right was never sent: that, not the cancelled pairing, is the news.
        if let refusal = PairingPrompt.refusal { return ValidationError(refusal) }
        return CLIError(error.message)
    }

    /// Activates `device` (a name or id) unless it already is; activation may ask for a code.
    func activateIfNeeded(_ device: String) async throws {
        let active = try await call(Control.ListRoutes()).routes.contains { route in
            route.device.displayName.lowercased() == device.lowercased() || route.device.id == device
        }
        if !active { _ = try await call(Control.Activate(device: device, protocol: nil), timeout: .seconds(600)) }
    }

    func close() async { await connection.close() }
}
