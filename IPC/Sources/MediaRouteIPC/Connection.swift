import CLinuxHelpers
import Glibc

/// One IPC connection: framing, the `hello` handshake, JSON-RPC correlation, descriptor passing.
///
/// The actor runs on its `EventLoop`, so socket readiness, decoding and state changes happen on one
/// thread without locks, and a caller whose task prefers that loop never leaves it.
/// Close a connection explicitly with `close()`; the loop keeps it alive until then.
///
/// Its state is in values it owns, one job each: `Handshake`, `PendingRequests` (what we asked),
/// `IncomingRequests` (what we answer), `IncomingFrames` (what we read), `OutgoingBuffer` (what we
/// write). The actor orchestrates them: reading (Connection+Input), handling messages
/// (Connection+Messages) and writing (Connection+Output).
public actor Connection: EventLoopIOHandler, EventLoopFlushable {
    public nonisolated let loop: EventLoop
    public nonisolated let configuration: ConnectionConfiguration
    nonisolated let fd: Int32
    let handlers: RPCHandlers

    public nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }

    // State touched for every message is `@exclusivity(unchecked)`: only the loop thread touches
    // it (actor isolation says so), and no access overlaps another, so the run-time check each
    // access would make (a thread-local lookup and a set insert) buys nothing; it cost a tenth of a
    // round trip between two connections on one loop.
    enum State { case handshaking, open, closed(RPCError) }
    @exclusivity(unchecked) var state = State.handshaking
    /// Set while `close` runs, so its last flush cannot start another close.
    @exclusivity(unchecked) var closing = false
    /// The peer's hello, once the handshake is done.
    public internal(set) var peer: Hello?
    /// Who the peer is, for sentences: the configured label, then "role 'name'" after hello.
    public internal(set) var label: String

    var handshake: Handshake
    @exclusivity(unchecked) var pending = PendingRequests()
    @exclusivity(unchecked) var incoming = IncomingRequests()
    @exclusivity(unchecked) var input: IncomingFrames
    @exclusivity(unchecked) var output: OutgoingBuffer
    /// The largest frame this side may send: 16 MiB until the handshake agrees on another.
    @exclusivity(unchecked) var sendLimit = FrameDecoder.defaultMaximumFrameLength
    @exclusivity(unchecked) var flushScheduled = false
    @exclusivity(unchecked) var wantsWritable = false
    /// Set while the unsent output is over the bound: nothing more is read from the peer (so it
    /// cannot make this side answer more) until it takes what waits. See `pauseReading`.
    @exclusivity(unchecked) var readingPaused = false
    var closeWaiters: [UnsafeContinuation<RPCError, Never>] = []
    /// Main-actor requests handed to tasks whose handlers have not yet run (see
    /// `answerOnMainActor`): later ones wait behind them, to run in the order they came.
    @exclusivity(unchecked) var mainActorRequestsInTasks = 0
    /// The handler last looked up by method name (`handlers` never changes, so it stays right).
    @exclusivity(unchecked) var lastRequestHandler: (method: String, answering: RPCHandlers.Answering)?

    static let readEvents = EPOLLIN.rawValue | EPOLLRDHUP.rawValue
    static let cancelMethod = "rpc.cancel"

    /// Adopts `socket` (a connected Unix stream socket) and completes the handshake.
    /// On failure the socket is closed and the error says why (version, role, timeout, ...).
    public static func open(socket: Int32, hello: Hello, side: HandshakeSide, loop: EventLoop = .shared,
                            configuration: ConnectionConfiguration, handlers: RPCHandlers = RPCHandlers()) async throws -> Connection {
        let connection = Connection(socket: socket, hello: hello, side: side, loop: loop, configuration: configuration, handlers: handlers)
        _ = try await connection.handshake()
        return connection
    }

    private init(socket: Int32, hello: Hello, side: HandshakeSide, loop: EventLoop, configuration: ConnectionConfiguration, handlers: RPCHandlers) {
        self.fd = socket
        self.loop = loop
        self.configuration = configuration
        var hello = hello
        hello.maximumFrameLength = configuration.maximumFrameLength
        self.handshake = Handshake(side: side, localHello: hello)
        self.handlers = handlers
        self.label = configuration.label
        self.input = IncomingFrames(maximumFrameLength: configuration.maximumFrameLength)
        self.output = OutgoingBuffer(highWater: configuration.outgoingHighWater)
    }

    /// Everything happens inside the continuation's closure: entering `withUnsafeThrowingContinuation`
    /// may suspend, and a hello processed before the waiter exists would leave it waiting forever.
    private func handshake() async throws -> Hello {
        try await withUnsafeThrowingContinuation { continuation in
            handshake.waiter = continuation
            do {
                try UnixSocket.setNonBlocking(fd)
                try loop.register(fd: fd, events: Self.readEvents, handler: self)
            } catch {
                close(reason: RPCError(.connectionClosed, "cannot use the socket to \(label): \(error)"))
                return
            }
            handshake.timer = loop.schedule(after: configuration.handshakeTimeout) { [unowned self] in
                self.assumeIsolated { connection in
                    connection.close(reason: RPCError(.handshakeRequired, "\(connection.label) did not complete the hello handshake within \(connection.configuration.handshakeTimeout)"))
                }
            }
            if case .initiator = handshake.side {
                let id = pending.makeID()
                handshake.helloRequestID = id
                try? enqueue(.request(id: id, method: "hello", params: handshake.localHello.json, descriptorCount: 0), descriptors: [])
            }
        }
    }

    // MARK: Public API

    /// Sends a request and waits for its answer. Fails with `RPCError` (`.timedOut`,
    /// `.connectionClosed`, or the peer's error) or `CancellationError`; a cancelled task also
    /// tells the peer with `rpc.cancel`. `descriptors` stay the caller's: duplicates are sent.
    public func request(_ method: String, _ params: JSONObject? = nil, descriptors: [Int32] = [],
                        timeout: Duration? = nil) async throws -> RPCResponse {
        try Task.checkCancellation()
        if output.isFull { try await waitForOutgoingSpace() }
        let id = pending.makeID()
        let timeout = timeout ?? configuration.defaultRequestTimeout
        // A resumed continuation goes to the task's executor preference, or else to the global
        // pool and only then back here: preferring the loop keeps the answer on this thread.
        // Tasks that live on the loop (handlers, the supervisor's) prefer it already.
        let prefersLoop = withUnsafeCurrentTask { $0?.unownedTaskExecutor == loop.asUnownedTaskExecutor() }
        guard prefersLoop else {
            return try await withTaskExecutorPreference(loop) { try await exchange(id, method, params, descriptors, timeout) }
        }
        // `exchange`'s body, written out: an async call less is a task switch less per request.
        return try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { continuation in
                send(id, method, params, descriptors, timeout, answerTo: continuation)
            }
        } onCancel: {
            loop.execute { self.assumeIsolated { $0.abandon(id, because: CancellationError()) } }
        }
    }

    /// Sends request `id` and waits for its answer, its timeout or the task's cancellation.
    private func exchange(_ id: RequestID, _ method: String, _ params: JSONObject?, _ descriptors: [Int32], _ timeout: Duration) async throws -> RPCResponse {
        try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { continuation in
                send(id, method, params, descriptors, timeout, answerTo: continuation)
            }
        } onCancel: {
            loop.execute { self.assumeIsolated { $0.abandon(id, because: CancellationError()) } }
        }
    }

    /// Sends request `id` and makes it pending, with `continuation` to resume when it ends.
    private func send(_ id: RequestID, _ method: String, _ params: JSONObject?, _ descriptors: [Int32], _ timeout: Duration,
                      answerTo continuation: UnsafeContinuation<RPCResponse, Error>) {
        do {
            try enqueue(.request(id: id, method: method, params: params, descriptorCount: descriptors.count), descriptors: descriptors)
        } catch {
            continuation.resume(throwing: error)
            return
        }
        let deadline = EventLoop.now() + timeout.clampedNanoseconds
        pending.add(.init(method: method, continuation: continuation, deadline: deadline, timeout: timeout), id: id)
        armTimeoutSweep(before: deadline)
        // Cancelled before the request was pending: the cancellation handler found nothing to abandon.
        if Task.isCancelled { abandon(id, because: CancellationError()) }
    }

    /// Sends `method` and, in the same write, the `rpc.cancel` that gives it up: the peer reads a
    /// request it is told to abandon before it could answer, which no timeout makes certain (on a
    /// busy machine the answer can be read first). For the conformance kit's §7 check; an answer,
    /// if one comes, is dropped as any late answer is.
    package func requestAbandoned(_ method: String, _ params: JSONObject? = nil) async throws {
        if output.isFull { try await waitForOutgoingSpace() }
        let id = pending.makeID()
        try enqueue(.request(id: id, method: method, params: params, descriptorCount: 0), descriptors: [])
        pending.rememberAbandoned(id)
        try enqueue(.notification(method: Self.cancelMethod, params: ["id": id.json], descriptorCount: 0), descriptors: [])
    }

    /// Sends a notification (no answer). Waits while the outgoing buffer is full.
    public func notify(_ method: String, _ params: JSONObject? = nil, descriptors: [Int32] = []) async throws {
        if output.isFull { try await waitForOutgoingSpace() }
        try enqueue(.notification(method: method, params: params, descriptorCount: descriptors.count), descriptors: descriptors)
    }

    /// Sends a notification from code that cannot wait (a synchronous callback, another thread).
    /// Posts keep their order. They cannot wait for the peer to read, so a peer that lets four times
    /// the outgoing bound pile up is disconnected rather than allowed to grow this side's memory.
    public nonisolated func post(_ method: String, _ params: JSONObject? = nil) {
        let message = Message.notification(method: method, params: params, descriptorCount: 0)
        // From a job of the main queue on a loop the main thread runs, it goes into the output at
        // once, unless work given to the loop before waits (another thread's post, the answer of a
        // handler the main actor just ran): then behind that work, as from anywhere else.
        if loop.inMainQueueJob && !loop.hasQueuedWork {
            assumeIsolated { $0.postFromMainQueueJob(message) }
        } else {
            loop.execute { [self] in assumeIsolated { try? $0.enqueue(message, descriptors: []) } }
        }
    }

    /// A main-queue job's report is written at once when it is the first since the output was
    /// last flushed, and then each time 64 KiB wait; the others leave with that flush, before the
    /// loop sleeps. The peer hears the first (a session started, a device found) while the main
    /// actor goes on, which can take long; a burst leaves in few writes; and a job that posts on
    /// and on, which the loop waits for, gets its reports out as it goes (one that floods is then
    /// caught as flooding, not as hung). These writes read no last words: the caller may hold
    /// the routing manager's lock, which handling what is read would take again.
    private func postFromMainQueueJob(_ message: Message) {
        let first = !flushScheduled
        do { try enqueue(message, descriptors: []) } catch { return }
        if first || output.unsentByteCount >= Self.writeAtOnceBytes { writeOutput(readingLastWords: false) }
    }

    /// Unsent output a main-queue job's post writes at once.
    static let writeAtOnceBytes = 64 * 1024

    public func close() {
        close(reason: RPCError(.connectionClosed, "the connection to \(label) was closed by this side"))
    }

    /// Why the connection closed, or nil while it is open.
    public var closeReason: RPCError? {
        if case .closed(let reason) = state { reason } else { nil }
    }

    /// Waits until the connection closes, for any reason, and returns the reason.
    public func waitUntilClosed() async -> RPCError {
        await withUnsafeContinuation { continuation in
            // Checked here, not before: the connection may close while this call suspends on entry.
            if let closeReason { continuation.resume(returning: closeReason) } else { closeWaiters.append(continuation) }
        }
    }

    /// Requests sent and not yet answered.
    public var pendingRequestCount: Int { pending.count }

    // MARK: Requests we sent

    private func armTimeoutSweep(before deadline: UInt64) {
        if let sweep = pending.timeoutSweep {
            if sweep.deadline <= deadline { return }
            loop.cancelTimer(sweep.timer)
        }
        let timer = loop.schedule(at: deadline) { [unowned self] in
            self.assumeIsolated { $0.sweepTimeouts() }
        }
        pending.timeoutSweep = (timer, deadline)
    }

    /// Abandons every request whose deadline has passed and re-arms for the earliest one left.
    private func sweepTimeouts() {
        pending.timeoutSweep = nil
        for id in pending.expired(at: EventLoop.now()) { abandon(id, because: nil) }
        if let next = pending.earliestDeadline { armTimeoutSweep(before: next) }
    }

    /// Gives up on a pending request: `error` nil means its timeout passed.
    private func abandon(_ id: RequestID, because error: (any Error)?) {
        guard let request = pending.abandon(id) else { return }
        try? enqueue(.notification(method: Self.cancelMethod, params: ["id": id.json], descriptorCount: 0), descriptors: [])
        request.continuation.resume(throwing: error ?? RPCError(.timedOut,
            "\(label) did not answer \"\(request.method)\" within \(request.timeout); the request was cancelled"))
    }

    /// Resumes the request an answer names; a late answer to one we gave up on is dropped.
    func complete(_ id: RequestID?, with result: Result<RPCResponse, RPCError>) {
        if let id {
            switch pending.claim(id) {
            case .waiting(let request): return request.continuation.resume(with: result.mapError { $0 })
            case .abandoned: return
            case .unknown: break
            }
        } else if case .failure(let error) = result {
            // The peer could not read something we sent; nothing to resume, but say so.
            return report(RPCError(error.code, "\(label) reported an error about a message from this side: \(error.message)"), reply: false)
        }
        report(RPCError(.unknownResponseID, "\(label) sent a response for request id \(id.map(String.init(describing:)) ?? "null"), which this side never sent or was already answered"), reply: false)
    }

    // MARK: Loop entry points

    // The loop calls these for every message. `assumeIsolated` would make the same check, then
    // allocate twice (`withoutActuallyEscaping` boxes its closure). Entry points stored as escaping
    // closures in a struct need no box, and a struct casts without reabstracting its function.
    // The cast drops only `isolated`, as `assumeIsolated`'s own does.
    struct LoopEntry: Sendable {
        let call: @Sendable (isolated Connection, _ events: UInt32) -> Void
    }
    private struct UncheckedEntry {
        let call: @Sendable (Connection, _ events: UInt32) -> Void
    }

    nonisolated func onLoop(_ entry: LoopEntry, _ events: UInt32) {
        loop.checkIsolated()
        unsafeBitCast(entry, to: UncheckedEntry.self).call(self, events)
    }

    // MARK: Closing

    func close(reason: RPCError) {
        guard closeReason == nil, !closing else { return }
        closing = true
        flush()  // best effort: the peer should see the error that ends the connection
        state = .closed(reason)
        loop.deregister(fd: fd)
        if let timer = handshake.timer { loop.cancelTimer(timer) }
        handshake.waiter?.resume(throwing: reason)
        handshake.waiter = nil
        let requests = pending.removeAll()
        if let sweep = pending.timeoutSweep { loop.cancelTimer(sweep.timer) }
        pending.timeoutSweep = nil
        cancelStallTimer()
        cancelUnfinishedFrameTimer()
        for request in requests {
            request.continuation.resume(throwing: RPCError(.connectionClosed, "\"\(request.method)\" got no answer: \(reason.message)"))
        }
        output.takeSpaceWaiters().forEach { $0.resume(throwing: reason) }
        incoming.cancelAll()
        input.closeDescriptors()
        output.discard()
        // Last, so that a peer that sees the end of the stream knows every descriptor it sent is closed.
        _ = Glibc.close(fd)
        let closeWaiters = self.closeWaiters
        self.closeWaiters.removeAll()
        closeWaiters.forEach { $0.resume(returning: reason) }
    }
}

extension Message {
    static func requestID(_ value: JSONValue) -> RequestID? {
        switch value {
        case .integer(let n): .number(n)
        case .string(let s): .string(s)
        default: nil
        }
    }
}

extension Connection {
    /// Bytes encoded but not yet written: what the outgoing bound limits.
    public var unsentByteCountForTesting: Int { output.unsentByteCount }
}
