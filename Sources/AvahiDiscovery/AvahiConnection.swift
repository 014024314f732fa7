import CAvahi
import Glibc
import Synchronization

/// Something that lives on an Avahi connection and must be re-created when the daemon comes back.
/// Called on Avahi's thread, with its lock held.
protocol AvahiClientUser: AnyObject {
    func clientRunning(_ client: OpaquePointer)
    func clientLost()
}

/// A connection to the Avahi daemon over D-Bus, served by a thread of Avahi's own.
///
/// It outlives the daemon: while the daemon (or its bus) is away it keeps trying, and browses and
/// publications made on it come back by themselves once the daemon does. Their handlers run on
/// Avahi's thread: keep them short, and do not call back into this connection from them.
public final class AvahiConnection: @unchecked Sendable {
    public enum State: Sendable, Equatable {
        case running
        /// The daemon or the D-Bus system bus cannot be reached; the sentence says which.
        case unavailable(String)
    }

    private let poll: OpaquePointer
    private let onStateChange: @Sendable (State) -> Void
    private let closed = Atomic<Bool>(false)
    // Touched only on Avahi's thread or with its lock held:
    private var client: OpaquePointer?
    private var state = State.unavailable("not connected yet")
    private var users: [ObjectIdentifier: AvahiClientUser] = [:]
    private var retry: AvahiTimer?

    /// How long to wait before trying again when the D-Bus bus itself is unreachable.
    static let retryMilliseconds: UInt32 = 1000

    /// Starts connecting; `onStateChange` hears when the daemon becomes reachable or goes away.
    public init(onStateChange: @escaping @Sendable (State) -> Void = { _ in }) throws(AvahiError) {
        guard let poll = avahi_threaded_poll_new() else { throw AvahiError("cannot create Avahi's event loop (out of memory)") }
        self.poll = poll
        self.onStateChange = onStateChange
        guard avahi_threaded_poll_start(poll) >= 0 else {
            avahi_threaded_poll_free(poll)
            throw AvahiError("cannot start Avahi's event loop thread")
        }
        locked { connect() }
    }

    deinit { close() }

    /// Stops the thread and withdraws everything published on this connection.
    public func close() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        avahi_threaded_poll_stop(poll)
        for user in users.values { user.clientLost() }
        users.removeAll()
        retry = nil
        if let client { avahi_client_free(client) }
        client = nil
        avahi_threaded_poll_free(poll)
    }

    /// Runs `body` with Avahi's lock, unless already on Avahi's thread in a callback.
    func locked<T>(_ body: () -> T) -> T {
        if AvahiCallbackScope.isActive { return body() }
        avahi_threaded_poll_lock(poll)
        defer { avahi_threaded_poll_unlock(poll) }
        return body()
    }

    func add(_ user: AvahiClientUser) {
        locked {
            users[ObjectIdentifier(user)] = user
            if case .running = state, let client { user.clientRunning(client) }
        }
    }

    /// Runs `action` on Avahi's thread after `milliseconds`; call with the lock held.
    func timer(after milliseconds: UInt32, _ action: @escaping () -> Void) -> AvahiTimer {
        AvahiTimer(on: avahi_threaded_poll_get(poll), after: milliseconds, action)
    }

    func remove(_ user: AvahiClientUser) {
        locked {
            if users.removeValue(forKey: ObjectIdentifier(user)) != nil { user.clientLost() }
        }
    }

    // MARK: On Avahi's thread (or with the lock held)

    private func connect() {
        var error: Int32 = 0
        let created = avahi_client_new(avahi_threaded_poll_get(poll), AVAHI_CLIENT_NO_FAIL, { client, state, context in
            AvahiCallbackScope.run { Unmanaged<AvahiConnection>.fromOpaque(context!).takeUnretainedValue().changed(client, state) }
        }, Unmanaged.passUnretained(self).toOpaque(), &error)
        if let created {
            client = created
        } else {
            set(.unavailable("cannot reach the D-Bus system bus that Avahi is on (\(String(cString: avahi_strerror(error)))); check DBUS_SYSTEM_BUS_ADDRESS"))
            scheduleReconnect()
        }
    }

    private func changed(_ reporting: OpaquePointer?, _ newState: AvahiClientState) {
        if client == nil { client = reporting }  // the first callback comes before avahi_client_new returns
        switch newState {
        case AVAHI_CLIENT_S_RUNNING:
            set(.running)
            if let client { users.values.forEach { $0.clientRunning(client) } }
        case AVAHI_CLIENT_CONNECTING:
            users.values.forEach { $0.clientLost() }
            set(.unavailable("the Avahi daemon is not running (nothing owns org.freedesktop.Avahi on the system bus)"))
        case AVAHI_CLIENT_FAILURE:
            let code = reporting.map { avahi_client_errno($0) } ?? Int32(AVAHI_ERR_DISCONNECTED)
            users.values.forEach { $0.clientLost() }
            set(.unavailable("lost the Avahi daemon's bus: \(String(cString: avahi_strerror(code)))"))
            scheduleReconnect()  // a failed client cannot recover; a new one is made on the timer
        default:
            // Registering the host name, or a host-name collision: services are re-announced once running.
            break
        }
    }

    private func set(_ newState: State) {
        guard newState != state else { return }
        state = newState
        onStateChange(newState)
    }

    private func scheduleReconnect() {
        guard retry == nil else { return }
        retry = timer(after: Self.retryMilliseconds) { [unowned self] in reconnect() }
    }

    private func reconnect() {
        retry = nil
        if let client { avahi_client_free(client) }
        client = nil
        connect()
    }
}

/// Marks the current thread as inside an Avahi callback, where Avahi's lock is already held.
enum AvahiCallbackScope {
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    static var isActive: Bool { pthread_getspecific(key) != nil }

    static func run(_ body: () -> Void) {
        let outer = pthread_getspecific(key)
        pthread_setspecific(key, UnsafeRawPointer(bitPattern: 1))
        body()
        pthread_setspecific(key, outer)
    }
}
