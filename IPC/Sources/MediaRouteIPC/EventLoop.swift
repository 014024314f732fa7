import CLinuxHelpers
import DequeModule
import Dispatch  // linked for the main queue's hooks (CLinuxHelpers.h declares them)
import Glibc
import HeapModule
import Synchronization

/// Receives readiness events for one file descriptor, on the loop's thread.
public protocol EventLoopIOHandler: AnyObject, Sendable {
    func handleIOEvents(_ events: UInt32)
}

/// Something with buffered output to write before the loop next sleeps.
public protocol EventLoopFlushable: AnyObject, Sendable {
    func flushBeforeSleep()
}

/// One thread that waits in `epoll_wait`, runs I/O handlers, timers and Swift jobs, in that order.
/// A driver's loop is its main thread, which serves the main dispatch queue too
/// (`init(mainThreadNamed:)`).
///
/// It is both a `SerialExecutor` (an actor can run on it: `Connection` does) and a `TaskExecutor`
/// (`Task(executorPreference: loop)`). When a reply arrives, the waiting task resumes on this same
/// thread in the same iteration, with no hop to the global pool: that is most of the IPC round trip.
public final class EventLoop: SerialExecutor, TaskExecutor, @unchecked Sendable {
    /// The process-wide loop, started on first use and never stopped.
    public static let shared = EventLoop(name: "mediaroute-io")

    public let name: String
    private let epollFD: Int32
    private let wakeFD: Int32
    /// The main dispatch queue's eventfd, on a loop the main thread runs (`runOnMainThread`).
    private let mainQueueFD: Int32?
    private let queue = Mutex<Deque<Work>>(Deque())
    /// True while the loop is in (or about to enter) epoll_wait; only then do producers write to `wakeFD`.
    private let isSleeping = Atomic<Bool>(false)
    private let isRunning = Atomic<Bool>(true)
    private let threadID = Atomic<UInt>(0)

    // Loop-thread state: touched only from the loop's own thread, never by overlapping accesses,
    // so without the run-time exclusivity check (as `Connection`'s per-message state).
    /// Handlers by descriptor: below `directDescriptors` in an array, which an event indexes
    /// without hashing; any higher descriptor in a dictionary.
    @exclusivity(unchecked) private var directHandlers: [(any EventLoopIOHandler)?] = []
    @exclusivity(unchecked) private var otherHandlers: [Int32: any EventLoopIOHandler] = [:]
    private static let directDescriptors: Int32 = 1 << 16
    @exclusivity(unchecked) private var timers = Heap<TimerEntry>()
    @exclusivity(unchecked) private var timerActions: [UInt64: () -> Void] = [:]
    @exclusivity(unchecked) private var nextTimerID: UInt64 = 1
    @exclusivity(unchecked) private var flushables: [any EventLoopFlushable] = []
    @exclusivity(unchecked) private var flushing: [any EventLoopFlushable] = []
    /// The main queue has work (its eventfd was read), to be run once the loop's own work is done.
    @exclusivity(unchecked) private var mainQueueReady = false
    @exclusivity(unchecked) private var drainingMainQueue = false
    @exclusivity(unchecked) private var started = false
    /// Whether a loop for the main thread was made: there is one main queue to serve.
    private static let mainThreadLoopMade = Atomic<Bool>(false)
    /// Where every connection on this loop receives: reads happen one at a time on the loop thread
    /// and each is copied into its connection's decoder at once, so one buffer serves them all
    /// (one per connection cost 64 KiB each: 3,000 idle clients held 190 MB).
    let receiveBuffers = UnixSocket.ReceiveBuffers(byteCount: 64 * 1024)

    private enum Work {
        case job(UnownedJob)
        case closure(@Sendable () -> Void)
    }

    private struct TimerEntry: Comparable {
        let deadline: UInt64
        let id: UInt64
        static func < (a: TimerEntry, b: TimerEntry) -> Bool { (a.deadline, a.id) < (b.deadline, b.id) }
    }

    /// A scheduled timer, for `cancelTimer`.
    public struct TimerHandle: Sendable, Hashable { let id: UInt64 }

    private init(name: String, mainQueueFD: Int32?) {
        self.name = name
        self.mainQueueFD = mainQueueFD
        signal(SIGPIPE, SIG_IGN)  // belt and braces: every send also uses MSG_NOSIGNAL
        epollFD = epoll_create1(Int32(EPOLL_CLOEXEC))
        wakeFD = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
        precondition(epollFD >= 0 && wakeFD >= 0, "cannot create epoll/eventfd: out of file descriptors")
        _ = clh_epoll_ctl(epollFD, EPOLL_CTL_ADD, wakeFD, EPOLLIN.rawValue)
        if let mainQueueFD { _ = clh_epoll_ctl(epollFD, EPOLL_CTL_ADD, mainQueueFD, EPOLLIN.rawValue) }
    }

    /// A loop on a thread of its own.
    public convenience init(name: String) {
        self.init(name: name, mainQueueFD: nil)
        let unmanaged = Unmanaged.passRetained(self)
        var thread = pthread_t()
        let rc = pthread_create(&thread, nil, { context in
            let loop = Unmanaged<EventLoop>.fromOpaque(context!).takeRetainedValue()
            loop.run()
            return nil
        }, unmanaged.toOpaque())
        precondition(rc == 0, "cannot start the event loop thread: \(rc)")
        pthread_detach(thread)
    }

    /// A loop for the main thread, made there and run there by `runOnMainThread()`, which also
    /// serves the main dispatch queue, where the main actor's jobs wait. A driver's connection to
    /// the supervisor lives on it: a request read there reaches the main actor, and a report the
    /// main actor makes leaves, without waking another thread (each such wake cost 40-100 µs of
    /// the time a person waits for a picker or a play, on a 2-CPU machine).
    public convenience init(mainThreadNamed name: String) {
        precondition(clh_is_main_thread() != 0, "EventLoop(mainThreadNamed:) is for the main thread")
        precondition(!Self.mainThreadLoopMade.exchange(true, ordering: .acquiringAndReleasing), "EventLoop(mainThreadNamed:) is made once per process")
        self.init(name: name, mainQueueFD: _dispatch_get_main_queue_handle_4CF())
        threadID.store(UInt(bitPattern: Int(bitPattern: pthread_self())), ordering: .releasing)
    }

    /// Runs the loop on the main thread until `shutdown()`, then exits the process.
    public func runOnMainThread() -> Never {
        precondition(mainQueueFD != nil && inLoopThread && !started, "runOnMainThread() runs a loop made by EventLoop(mainThreadNamed:), once, on the main thread")
        run()
        exit(0)
    }

    /// Stops the thread after the current iteration (a main-thread loop's process exits then).
    /// Registered handlers are dropped, not closed.
    public func shutdown() {
        isRunning.store(false, ordering: .sequentiallyConsistent)
        wake()
    }

    public var inLoopThread: Bool { threadID.load(ordering: .acquiring) == UInt(bitPattern: Int(bitPattern: pthread_self())) }

    /// Whether the caller is a job of the main queue (the main actor's among them) that this loop's
    /// thread runs (see `init(mainThreadNamed:)`), or runs as one (`runAsMainQueueJob`): the
    /// loop's own work waits for it to end.
    var inMainQueueJob: Bool { inLoopThread && drainingMainQueue }

    /// Whether work given to the loop (`execute`, jobs) waits to run.
    var hasQueuedWork: Bool { !queue.withLock { $0.isEmpty } }

    /// Runs `body` now, as a job of the main queue (`inMainQueueJob`), if this is the main
    /// thread's loop, called on it outside a job, and nothing waits to run before: no work given
    /// to the loop, no main-queue job (queued this turn too). Returns whether it ran.
    func runAsMainQueueJob(_ body: () -> Void) -> Bool {
        guard mainQueueFD != nil, inLoopThread, !drainingMainQueue, !hasQueuedWork, !mainQueueHasJobs() else { return false }
        drainingMainQueue = true
        defer { drainingMainQueue = false }
        body()
        return true
    }

    /// Whether the main queue has jobs: known from an earlier event, or its eventfd (written by
    /// libdispatch at each wakeup, from any thread) readable now; the loop reads it as usual.
    private func mainQueueHasJobs() -> Bool {
        if mainQueueReady { return true }
        guard let mainQueueFD else { return false }
        var ready = pollfd(fd: mainQueueFD, events: Int16(POLLIN), revents: 0)
        return poll(&ready, 1, 0) > 0
    }

    // MARK: Executors

    public func enqueue(_ job: consuming ExecutorJob) {
        push(.job(UnownedJob(job)))
    }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    public func asUnownedTaskExecutor() -> UnownedTaskExecutor {
        UnownedTaskExecutor(ordinary: self)
    }

    /// Lets `assumeIsolated` ask the thread directly instead of trapping through `checkIsolated`.
    public func isIsolatingCurrentContext() -> Bool? { inLoopThread }

    public func checkIsolated() {
        precondition(inLoopThread, "expected to run on event loop '\(name)'")
    }

    /// Runs `action` on the loop thread, after work already queued.
    public func execute(_ action: @escaping @Sendable () -> Void) {
        push(.closure(action))
    }

    private func push(_ work: Work) {
        queue.withLock { $0.append(work) }
        if isSleeping.load(ordering: .sequentiallyConsistent) { wake() }
    }

    private func wake() {
        var one: UInt64 = 1
        _ = Glibc.write(wakeFD, &one, 8)
    }

    // MARK: Loop-thread API

    public func register(fd: Int32, events: UInt32, handler: any EventLoopIOHandler) throws(IPCSystemError) {
        checkIsolated()
        guard clh_epoll_ctl(epollFD, EPOLL_CTL_ADD, fd, events) == 0 else { throw IPCSystemError("epoll_ctl(ADD)") }
        setHandler(handler, for: fd)
    }

    public func setEvents(fd: Int32, events: UInt32) {
        checkIsolated()
        _ = clh_epoll_ctl(epollFD, EPOLL_CTL_MOD, fd, events)
    }

    public func deregister(fd: Int32) {
        checkIsolated()
        _ = clh_epoll_ctl(epollFD, EPOLL_CTL_DEL, fd, 0)
        setHandler(nil, for: fd)
    }

    private func setHandler(_ handler: (any EventLoopIOHandler)?, for fd: Int32) {
        guard fd >= 0, fd < Self.directDescriptors else { return otherHandlers[fd] = handler }
        if handler != nil, Int(fd) >= directHandlers.count { directHandlers.append(contentsOf: repeatElement(nil, count: Int(fd) + 1 - directHandlers.count)) }
        if Int(fd) < directHandlers.count { directHandlers[Int(fd)] = handler }
    }

    /// Runs `action` on the loop thread once `delay` has passed, unless cancelled first.
    public func schedule(after delay: Duration, _ action: @escaping () -> Void) -> TimerHandle {
        schedule(at: Self.now() + delay.clampedNanoseconds, action)
    }

    /// Runs `action` on the loop thread once `now()` reaches `deadline`, unless cancelled first.
    func schedule(at deadline: UInt64, _ action: @escaping () -> Void) -> TimerHandle {
        checkIsolated()
        let id = nextTimerID
        nextTimerID += 1
        timers.insert(TimerEntry(deadline: deadline, id: id))
        timerActions[id] = action
        return TimerHandle(id: id)
    }

    public func cancelTimer(_ handle: TimerHandle) {
        checkIsolated()
        timerActions[handle.id] = nil  // the heap entry is skipped when it comes due
    }

    /// Asks for `flushBeforeSleep()` once before the loop next waits for events.
    public func scheduleFlush(_ flushable: any EventLoopFlushable) {
        checkIsolated()
        flushables.append(flushable)
    }

    /// The loop's clock (CLOCK_MONOTONIC, nanoseconds).
    static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    // MARK: The loop

    private func run() {
        threadID.store(UInt(bitPattern: Int(bitPattern: pthread_self())), ordering: .releasing)
        started = true
        var readyFDs = [Int32](repeating: 0, count: 64)
        var readyEvents = [UInt32](repeating: 0, count: 64)
        while isRunning.load(ordering: .relaxed) {
            runQueuedWork()
            runFlushes()
            if mainQueueReady {
                // After the loop's own work and its output: what other threads and earlier jobs
                // gave it goes out before what the main queue's jobs make now. Then around again,
                // for the work and output those jobs made.
                mainQueueReady = false
                drainingMainQueue = true
                _dispatch_main_queue_callback_4CF(nil)
                drainingMainQueue = false
                continue
            }
            let timeout = millisecondsUntilNextTimer()
            isSleeping.store(true, ordering: .sequentiallyConsistent)
            let hasWork = !queue.withLock { $0.isEmpty }
            let n = clh_epoll_wait(epollFD, &readyFDs, &readyEvents, 64, hasWork ? 0 : timeout)
            isSleeping.store(false, ordering: .sequentiallyConsistent)
            if n > 0 {
                for i in 0..<Int(n) {
                    let fd = readyFDs[i]
                    if fd == wakeFD {
                        var value: UInt64 = 0
                        _ = Glibc.read(wakeFD, &value, 8)
                    } else if fd == mainQueueFD {
                        var value: UInt64 = 0
                        _ = Glibc.read(fd, &value, 8)
                        mainQueueReady = true
                    } else {
                        // A copy: a handler that closes deregisters itself, and must live until it returns.
                        let handler = fd >= 0 && Int(fd) < directHandlers.count ? directHandlers[Int(fd)] : otherHandlers[fd]
                        handler?.handleIOEvents(readyEvents[i])
                    }
                }
            }
            runDueTimers()
        }
        directHandlers.removeAll()
        otherHandlers.removeAll()
        timerActions.removeAll()
        close(epollFD)
        close(wakeFD)
    }

    private func runQueuedWork() {
        // Bounded so that I/O is never starved by tasks that keep re-enqueueing themselves.
        for _ in 0..<1024 {
            guard let work = queue.withLock({ $0.popFirst() }) else { return }
            switch work {
            case .job(let job):
                job.runSynchronously(isolatedTo: asUnownedSerialExecutor(), taskExecutor: asUnownedTaskExecutor())
            case .closure(let action):
                action()
            }
        }
    }

    private func runFlushes() {
        while !flushables.isEmpty {
            swap(&flushables, &flushing)  // both keep their storage: no allocation per iteration
            for i in flushing.indices { flushing[i].flushBeforeSleep() }
            flushing.removeAll(keepingCapacity: true)
        }
    }

    private func millisecondsUntilNextTimer() -> Int32 {
        while let first = timers.min, timerActions[first.id] == nil { _ = timers.removeMin() }
        guard let first = timers.min else { return -1 }
        let now = Self.now()
        if first.deadline <= now { return 0 }
        return Int32(min((first.deadline - now + 999_999) / 1_000_000, 60_000))
    }

    private func runDueTimers() {
        guard !timers.isEmpty else { return }
        let now = Self.now()
        while let first = timers.min, first.deadline <= now {
            _ = timers.removeMin()
            if let action = timerActions.removeValue(forKey: first.id) { action() }
        }
    }
}

extension Duration {
    /// Whole milliseconds, for poll timeouts and for figures people read.
    public var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }

    /// Seconds as a Double, for media positions, rates and figures people read.
    public var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// Whole nanoseconds, negative durations counting as zero and huge ones as a century.
    var clampedNanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0 else { return 0 }
        return UInt64(min(seconds, 3_153_600_000)) * 1_000_000_000 + UInt64(max(0, attoseconds / 1_000_000_000))
    }
}
