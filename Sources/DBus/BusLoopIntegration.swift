import CDBus
import CLinuxHelpers
import Glibc
import MediaRouteIPC

/// Runs one libdbus connection on our event loop: its watches become epoll registrations, its
/// timeouts loop timers, and its incoming messages are dispatched on the loop thread as soon as
/// they are read. No thread polls the bus; nothing blocks.
///
/// libdbus may keep two watches on one descriptor (reading and writing); epoll takes a descriptor
/// once, so the registrations are per descriptor, with the union of the enabled watches' events.
///
/// Used on the loop thread only (libdbus calls it back from inside the calls we make there).
final class BusLoopIntegration: EventLoopIOHandler, @unchecked Sendable {  // loop-thread state only
    let raw: OpaquePointer
    let loop: EventLoop
    /// Every message libdbus read, in order (replies, calls to us, signals).
    var onMessage: (OpaquePointer) -> Void = { _ in }
    private var watches: [Int32: [OpaquePointer]] = [:]
    private var registered: [Int32: UInt32] = [:]
    /// The timeouts libdbus has (enabled or not), and the loop timers of the enabled ones.
    private var timeouts: Set<OpaquePointer> = []
    private var timers: [OpaquePointer: EventLoop.TimerHandle] = [:]
    private var dispatchScheduled = false
    /// False once `uninstall` ran: the connection may be freed, and queued work must not touch it.
    private var isInstalled = false

    init(connection raw: OpaquePointer, loop: EventLoop) {
        self.raw = raw
        self.loop = loop
    }

    /// Installs the callbacks (libdbus calls `add` for its existing watches at once).
    func install() {
        isInstalled = true
        let context = Unmanaged.passUnretained(self).toOpaque()
        dbus_connection_set_watch_functions(raw, { watch, context in
            BusLoopIntegration.from(context).added(watch!)
            return 1
        }, { watch, context in
            BusLoopIntegration.from(context).removed(watch!)
        }, { watch, context in
            BusLoopIntegration.from(context).toggled(watch!)
        }, context, nil)
        dbus_connection_set_timeout_functions(raw, { timeout, context in
            BusLoopIntegration.from(context).added(timeout: timeout!)
            return 1
        }, { timeout, context in
            BusLoopIntegration.from(context).removed(timeout: timeout!)
        }, { timeout, context in
            let integration = BusLoopIntegration.from(context)
            integration.disarmed(timeout!)
            integration.armed(timeout!)
        }, context, nil)
        dbus_connection_set_dispatch_status_function(raw, { _, status, context in
            if status == DBUS_DISPATCH_DATA_REMAINS { BusLoopIntegration.from(context).scheduleDispatch() }
        }, context, nil)
        dbus_connection_set_wakeup_main_function(raw, { context in
            // libdbus queued output from inside a call of ours: writes happen when the socket is
            // writable, which its write watch (now enabled) tells epoll.
            BusLoopIntegration.from(context).scheduleDispatch()
        }, context, nil)
        _ = dbus_connection_add_filter(raw, { _, message, context in
            BusLoopIntegration.from(context!).onMessage(message!)
            return DBUS_HANDLER_RESULT_HANDLED
        }, context, nil)
        scheduleDispatch()  // messages read before the loop took over (the bus's NameAcquired)
    }

    /// Removes every callback and registration, before the connection is closed.
    func uninstall() {
        guard isInstalled else { return }
        isInstalled = false
        dbus_connection_set_watch_functions(raw, nil, nil, nil, nil, nil)
        dbus_connection_set_timeout_functions(raw, nil, nil, nil, nil, nil)
        dbus_connection_set_dispatch_status_function(raw, nil, nil, nil)
        dbus_connection_set_wakeup_main_function(raw, nil, nil, nil)
        for fd in registered.keys { loop.deregister(fd: fd) }
        registered = [:]
        watches = [:]
        for handle in timers.values { loop.cancelTimer(handle) }
        timers = [:]
        timeouts = []
    }

    private static func from(_ context: UnsafeMutableRawPointer?) -> BusLoopIntegration {
        Unmanaged<BusLoopIntegration>.fromOpaque(context!).takeUnretainedValue()
    }

    // MARK: Watches

    private func added(_ watch: OpaquePointer) {
        let fd = dbus_watch_get_unix_fd(watch)
        watches[fd, default: []].append(watch)
        update(fd)
    }

    private func removed(_ watch: OpaquePointer) {
        let fd = dbus_watch_get_unix_fd(watch)
        watches[fd]?.removeAll { $0 == watch }
        update(fd)
    }

    private func toggled(_ watch: OpaquePointer) { update(dbus_watch_get_unix_fd(watch)) }

    private func update(_ fd: Int32) {
        var events: UInt32 = 0
        for watch in watches[fd] ?? [] where dbus_watch_get_enabled(watch) != 0 {
            let flags = dbus_watch_get_flags(watch)
            if flags & DBUS_WATCH_READABLE.rawValue != 0 { events |= EPOLLIN.rawValue }
            if flags & DBUS_WATCH_WRITABLE.rawValue != 0 { events |= EPOLLOUT.rawValue }
        }
        switch (registered[fd], events) {
        case (nil, 0):
            break
        case (nil, _):
            if (try? loop.register(fd: fd, events: events, handler: self)) != nil { registered[fd] = events }
        case (.some, 0) where watches[fd]?.isEmpty ?? true:
            loop.deregister(fd: fd)
            registered[fd] = nil
        case (.some(let old), _) where old != events:
            loop.setEvents(fd: fd, events: events)
            registered[fd] = events
        default:
            break
        }
    }

    func handleIOEvents(_ events: UInt32) {
        guard isInstalled else { return }
        // One connection, one socket: every watch we have is on it. Handling one watch may make
        // libdbus remove (and free) others, so each is checked to be still ours before it is used.
        for (fd, list) in watches {
            for watch in list where watches[fd]?.contains(watch) == true && dbus_watch_get_enabled(watch) != 0 {
                var flags: UInt32 = 0
                if events & (EPOLLIN.rawValue | EPOLLHUP.rawValue) != 0 { flags |= DBUS_WATCH_READABLE.rawValue }
                if events & EPOLLOUT.rawValue != 0 { flags |= DBUS_WATCH_WRITABLE.rawValue }
                if events & EPOLLHUP.rawValue != 0 { flags |= DBUS_WATCH_HANGUP.rawValue }
                if events & EPOLLERR.rawValue != 0 { flags |= DBUS_WATCH_ERROR.rawValue }
                let mine = dbus_watch_get_flags(watch) & (DBUS_WATCH_READABLE.rawValue | DBUS_WATCH_WRITABLE.rawValue)
                guard flags & (mine | DBUS_WATCH_HANGUP.rawValue | DBUS_WATCH_ERROR.rawValue) != 0 else { continue }
                _ = dbus_watch_handle(watch, flags)
            }
        }
        dispatch()
    }

    // MARK: Timeouts

    private func added(timeout: OpaquePointer) {
        timeouts.insert(timeout)
        armed(timeout)
    }

    private func removed(timeout: OpaquePointer) {
        timeouts.remove(timeout)
        disarmed(timeout)
    }

    private func armed(_ timeout: OpaquePointer) {
        guard dbus_timeout_get_enabled(timeout) != 0 else { return }
        let interval = Duration.milliseconds(Int(dbus_timeout_get_interval(timeout)))
        disarmed(timeout)
        timers[timeout] = loop.schedule(after: interval) { [weak self] in
            guard let self, self.isInstalled, self.timers.removeValue(forKey: timeout) != nil else { return }
            _ = dbus_timeout_handle(timeout)
            // libdbus timeouts repeat until removed; handling may have removed (freed) or re-armed it.
            if self.timeouts.contains(timeout), self.timers[timeout] == nil { self.armed(timeout) }
            self.dispatch()
        }
    }

    private func disarmed(_ timeout: OpaquePointer) {
        if let handle = timers.removeValue(forKey: timeout) { loop.cancelTimer(handle) }
    }

    // MARK: Dispatch

    private func scheduleDispatch() {
        guard !dispatchScheduled else { return }
        dispatchScheduled = true
        loop.execute { [self] in
            dispatchScheduled = false
            dispatch()
        }
    }

    /// Hands every complete message read so far to the filter, in order.
    func dispatch() {
        guard isInstalled else { return }
        while isInstalled, dbus_connection_dispatch(raw) == DBUS_DISPATCH_DATA_REMAINS {}
    }
}
