import CDBus
import Glibc
import MediaRouteIPC

/// A connection to a D-Bus bus, run on one of our event loops: calls, signals, and objects we
/// export. Everything libdbus does for it happens on the loop thread, which is this actor's
/// executor, so libdbus is never entered from two threads and no thread waits on the bus.
///
/// Close it with `close()` when done; a connection whose bus goes away closes by itself
/// (pending calls fail with `Disconnected`, signal streams finish, `waitUntilClosed` returns).
public actor DBusConnection {
    nonisolated let loop: EventLoop
    public nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }
    /// The name the bus gave this connection (`:1.42`).
    public nonisolated let uniqueName: String
    let integration: BusLoopIntegration
    var raw: OpaquePointer { integration.raw }

    struct PendingCall {
        let continuation: CheckedContinuation<Result<[DBusValue], DBusError>, Never>
        let timer: EventLoop.TimerHandle
        let description: String
    }
    struct Subscription {
        let rule: DBusMatchRule
        let continuation: AsyncStream<DBusSignal>.Continuation
    }
    var pending: [UInt32: PendingCall] = [:]
    /// Callers waiting for the number of pending calls to drop below `maximumPendingCalls`.
    var callersWaiting: [CheckedContinuation<Void, Never>] = []
    /// Calls past the wait for a slot and not yet registered in `pending`.
    var callsStarting = 0
    var subscriptions: [Int: Subscription] = [:]
    var nextSubscription = 1
    /// Owners of the well-known names subscriptions name as senders (signals come from the owner's unique name).
    var owners: [String: String] = [:]
    var exported: [DBusObjectPath: [String: DBusInterface]] = [:]
    private var closeWaiters: [CheckedContinuation<Void, Never>] = []
    public private(set) var isConnected = true

    private init(raw: OpaquePointer, uniqueName: String, loop: EventLoop) {
        self.loop = loop
        self.uniqueName = uniqueName
        integration = BusLoopIntegration(connection: raw, loop: loop)
    }

    /// The system bus: `DBUS_SYSTEM_BUS_ADDRESS` if set, else the system's default socket.
    public static func system(on loop: EventLoop = .shared) async throws(DBusError) -> DBusConnection {
        let address = environmentValue("DBUS_SYSTEM_BUS_ADDRESS") ?? "unix:path=/run/dbus/system_bus_socket"
        return try await connect(address: address, on: loop)
    }

    /// The session bus named by `DBUS_SESSION_BUS_ADDRESS`.
    public static func session(on loop: EventLoop = .shared) async throws(DBusError) -> DBusConnection {
        guard let address = environmentValue("DBUS_SESSION_BUS_ADDRESS") else {
            throw DBusError(name: DBusError.failed, message: "DBUS_SESSION_BUS_ADDRESS is not set: there is no session bus to connect to")
        }
        return try await connect(address: address, on: loop)
    }

    /// Connects and registers with the bus at `address`. Connecting and the bus's Hello block in
    /// libdbus, so they run on a thread of their own; from then on the loop runs the connection.
    public static func connect(address: String, on loop: EventLoop = .shared) async throws(DBusError) -> DBusConnection {
        let opened: Result<OpenedConnection, DBusError>
        do {
            opened = try await onThreadOfItsOwn { OpenedConnection.open(address) }
        } catch {
            throw DBusError(name: DBusError.failed, message: "cannot start a thread to connect to \(address): \(error)")
        }
        let connection = DBusConnection(raw: try opened.get().pointer, uniqueName: try opened.get().uniqueName, loop: loop)
        await connection.start()
        return connection
    }

    private func start() {
        // Weak: a connection released without `close()` closes from its deinit by a job on the
        // loop, and messages read before that job runs are dropped, not handed to a freed actor.
        integration.onMessage = { [weak self] message in
            guard let self else { return }
            let borrowed = MessageReference(message)  // valid for this call, on this thread
            self.assumeIsolated { $0.received(borrowed.message) }
        }
        integration.install()
    }

    /// Closes the connection: pending calls fail with `Disconnected`, signal streams finish.
    public func close() { shutDown(because: "the connection was closed") }

    /// Returns when the connection is closed, by `close()` or because the bus went away.
    public func waitUntilClosed() async {
        guard isConnected else { return }
        await withCheckedContinuation { closeWaiters.append($0) }
    }

    func shutDown(because why: String) {
        guard isConnected else { return }
        isConnected = false
        for (_, call) in pending {
            loop.cancelTimer(call.timer)
            call.continuation.resume(returning: .failure(.disconnected("\(call.description): \(why)")))
        }
        pending = [:]
        for waiter in callersWaiting { waiter.resume() }
        callersWaiting = []
        for (_, subscription) in subscriptions { subscription.continuation.finish() }
        subscriptions = [:]
        integration.uninstall()
        dbus_connection_close(raw)
        dbus_connection_unref(raw)
        for waiter in closeWaiters { waiter.resume() }
        closeWaiters = []
    }

    // MARK: Incoming messages (loop thread, in the order libdbus read them)

    private func received(_ message: OpaquePointer) {
        switch dbus_message_get_type(message) {
        case DBUS_MESSAGE_TYPE_METHOD_RETURN, DBUS_MESSAGE_TYPE_ERROR:
            replied(message)
        case DBUS_MESSAGE_TYPE_SIGNAL:
            let signal = DBusSignal(sender: Self.string(dbus_message_get_sender(message)), path: DBusObjectPath(Self.string(dbus_message_get_path(message))),
                                    interface: Self.string(dbus_message_get_interface(message)), member: Self.string(dbus_message_get_member(message)),
                                    arguments: MessageReader.arguments(of: message))
            if signal.interface == "org.freedesktop.DBus.Local", signal.member == "Disconnected" {
                shutDown(because: "the bus closed the connection")
            } else {
                deliver(signal)
            }
        case DBUS_MESSAGE_TYPE_METHOD_CALL:
            called(message)
        default:
            break
        }
    }

    static func string(_ pointer: UnsafePointer<CChar>?) -> String { pointer.map { String(cString: $0) } ?? "" }

    deinit {
        guard isConnected else { return }
        // Not closed by its owner: close it on the loop, where libdbus is used.
        let integration = integration
        integration.loop.execute {
            integration.uninstall()
            dbus_connection_close(integration.raw)
            dbus_connection_unref(integration.raw)
        }
    }
}

/// A libdbus connection just opened and registered on a thread of its own, on its way to the
/// loop that runs it from then on: handed over once, never used by both threads.
struct OpenedConnection: @unchecked Sendable {  // handed from the opening thread to the loop once
    let pointer: OpaquePointer
    let uniqueName: String

    static func open(_ address: String) -> Result<OpenedConnection, DBusError> {
        _ = dbus_threads_init_default()
        var error = CDBus.DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        guard let raw = dbus_connection_open_private(address, &error) else {
            return .failure(DBusError(name: DBusError.failed, message: "cannot connect to the bus at \(address): \(message(error))"))
        }
        dbus_connection_set_exit_on_disconnect(raw, 0)
        guard dbus_bus_register(raw, &error) != 0, let name = dbus_bus_get_unique_name(raw) else {
            let why = message(error)
            dbus_connection_close(raw)
            dbus_connection_unref(raw)
            return .failure(DBusError(name: DBusError.failed, message: "the bus at \(address) did not accept us: \(why)"))
        }
        return .success(OpenedConnection(pointer: raw, uniqueName: String(cString: name)))
    }

    private static func message(_ error: CDBus.DBusError) -> String {
        error.message.map { String(cString: $0) } ?? error.name.map { String(cString: $0) } ?? "unknown error"
    }
}

func environmentValue(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }
