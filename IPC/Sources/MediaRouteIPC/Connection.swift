import CLinuxHelpers
import DequeModule
import Glibc

/// One IPC connection: framing, the `hello` handshake, JSON-RPC correlation, descriptor passing.
///
/// The actor runs on its `EventLoop`, so socket readiness, decoding and state changes happen on one
/// thread without locks, and a caller whose task prefers that loop never leaves it.
/// Close a connection explicitly with `close()`; the loop keeps it alive until then.
public actor Connection: EventLoopIOHandler, EventLoopFlushable {
    public nonisolated let loop: EventLoop
    public nonisolated let configuration: ConnectionConfiguration
    nonisolated let fd: Int32
    private let side: HandshakeSide
    private let localHello: Hello
    private let handlers: RPCHandlers

    public nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }

    // State touched for every message is `@exclusivity(unchecked)`: only the loop thread touches
    // it (actor isolation says so), and no access overlaps another, so the run-time check each
    // access would make (a thread-local lookup and a set insert) buys nothing; it cost a tenth of a
    // round trip between two connections on one loop.
    private enum State { case handshaking, open, closed(RPCError) }
    @exclusivity(unchecked) private var state = State.handshaking
    /// Set while `close` runs, so its last flush cannot start another close.
    @exclusivity(unchecked) private var closing = false
    /// The peer's hello, once the handshake is done.
    public private(set) var peer: Hello?
    /// Who the peer is, for sentences: the configured label, then "role 'name'" after hello.
    public private(set) var label: String

    // Handshake
    private var handshakeWaiter: UnsafeContinuation<Hello, Error>?
    private var handshakeTimer: EventLoop.TimerHandle?
    private var helloRequestID: RequestID?

    // Reading
    @exclusivity(unchecked) private var decoder: FrameDecoder
    /// The frame the peer began and has not finished, by its stream offset, and the timer that
    /// ends the connection if it stays unfinished (a peer may not pin a buffer by going quiet).
    @exclusivity(unchecked) private var unfinishedFrame: (timer: EventLoop.TimerHandle, offset: Int)?
    /// Descriptors received but not yet claimed by a frame, with the stream offset where the read
    /// that brought them ended: a frame starting before that offset must claim them.
    @exclusivity(unchecked) private var receivedDescriptors = Deque<(fd: Int32, arrivalEnd: Int)>()
    @exclusivity(unchecked) private var receivedOffset = 0

    // Writing
    @exclusivity(unchecked) private var outBuffer: [UInt8] = []
    @exclusivity(unchecked) private var outSent = 0
    /// Duplicated descriptors to attach at `offset` (the first byte of their frame) in `outBuffer`.
    @exclusivity(unchecked) private var outDescriptors = Deque<(offset: Int, fds: [Int32])>()
    private var sendLimit: Int
    @exclusivity(unchecked) private var flushScheduled = false
    @exclusivity(unchecked) private var wantsWritable = false
    private var spaceWaiters: [UnsafeContinuation<Void, Error>] = []
    /// Set while the unsent output is over the bound: nothing more is read from the peer (so it
    /// cannot make this side answer more) until it takes what waits. See `pauseReading`.
    @exclusivity(unchecked) private var readingPaused = false
    /// Bytes written since the connection opened: how a stall is told from a slow reader.
    @exclusivity(unchecked) private var bytesWritten = 0
    @exclusivity(unchecked) private var stallTimer: EventLoop.TimerHandle?

    // Requests
    private struct Pending {
        let method: String
        let continuation: UnsafeContinuation<RPCResponse, Error>
        /// `EventLoop.now()` after which the request is abandoned.
        let deadline: UInt64
        let timeout: Duration
    }
    @exclusivity(unchecked) private var nextID: Int64 = 1
    @exclusivity(unchecked) private var pending: [RequestID: Pending] = [:]
    /// One timer for all pending requests, due at (or before) the earliest deadline: a request
    /// costs no timer of its own, and nothing piles up in the loop while answers come in time.
    @exclusivity(unchecked) private var timeoutSweep: (timer: EventLoop.TimerHandle, deadline: UInt64)?
    /// Requests we gave up on (cancelled, timed out): their late answers are dropped quietly.
    private var abandoned = Set<RequestID>()
    private var abandonedOrder = Deque<RequestID>()
    /// Requests from the peer being answered, with their handlers' tasks (nil until `start` has
    /// the task in hand, and for good if the handler finished before that).
    @exclusivity(unchecked) private var incoming: [RequestID: Task<Void, Never>?] = [:]
    /// Handler tasks started but not yet given their first turn on the loop, and whether frames
    /// read after their requests wait for that (IPC/README.md §3: frames are handled in order).
    @exclusivity(unchecked) private var handlersAwaitingFirstTurn = 0
    @exclusivity(unchecked) private var framesHeld = false
    private var closeWaiters: [UnsafeContinuation<RPCError, Never>] = []

    private static let readEvents = EPOLLIN.rawValue | EPOLLRDHUP.rawValue
    private static let cancelMethod = "rpc.cancel"

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
        self.side = side
        var hello = hello
        hello.maximumFrameLength = configuration.maximumFrameLength
        self.localHello = hello
        self.handlers = handlers
        self.label = configuration.label
        self.decoder = FrameDecoder(maximumFrameLength: configuration.maximumFrameLength)
        self.sendLimit = FrameDecoder.defaultMaximumFrameLength
    }

    /// Everything happens inside the continuation's closure: entering `withUnsafeThrowingContinuation`
    /// may suspend, and a hello processed before the waiter exists would leave it waiting forever.
    private func handshake() async throws -> Hello {
        try await withUnsafeThrowingContinuation { continuation in
            handshakeWaiter = continuation
            do {
                try UnixSocket.setNonBlocking(fd)
                try loop.register(fd: fd, events: Self.readEvents, handler: self)
            } catch {
                close(reason: RPCError(.connectionClosed, "cannot use the socket to \(label): \(error)"))
                return
            }
            handshakeTimer = loop.schedule(after: configuration.handshakeTimeout) { [unowned self] in
                self.assumeIsolated { connection in
                    connection.close(reason: RPCError(.handshakeRequired, "\(connection.label) did not complete the hello handshake within \(connection.configuration.handshakeTimeout)"))
                }
            }
            if case .initiator = side {
                let id = makeRequestID()
                helloRequestID = id
                try? enqueue(.request(id: id, method: "hello", params: localHello.json, descriptorCount: 0), descriptors: [])
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
        try await waitForOutgoingSpace()
        let id = makeRequestID()
        let timeout = timeout ?? configuration.defaultRequestTimeout
        // A resumed continuation goes to the task's executor preference, or else to the global
        // pool and only then back here: preferring the loop keeps the answer on this thread.
        // Tasks that live on the loop (handlers, the supervisor's) prefer it already.
        let prefersLoop = withUnsafeCurrentTask { $0?.unownedTaskExecutor == loop.asUnownedTaskExecutor() }
        if prefersLoop { return try await exchange(id, method, params, descriptors, timeout) }
        return try await withTaskExecutorPreference(loop) { try await exchange(id, method, params, descriptors, timeout) }
    }

    /// Sends request `id` and waits for its answer, its timeout or the task's cancellation.
    private func exchange(_ id: RequestID, _ method: String, _ params: JSONObject?, _ descriptors: [Int32], _ timeout: Duration) async throws -> RPCResponse {
        try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<RPCResponse, Error>) in
                do {
                    try enqueue(.request(id: id, method: method, params: params, descriptorCount: descriptors.count), descriptors: descriptors)
                } catch {
                    continuation.resume(throwing: error)
                    return
                }
                let deadline = EventLoop.now() + timeout.clampedNanoseconds
                pending[id] = Pending(method: method, continuation: continuation, deadline: deadline, timeout: timeout)
                armTimeoutSweep(before: deadline)
                // Cancelled before the request was pending: the cancellation handler found nothing to abandon.
                if Task.isCancelled { abandon(id, because: CancellationError()) }
            }
        } onCancel: {
            loop.execute { self.assumeIsolated { $0.abandon(id, because: CancellationError()) } }
        }
    }

    /// Sends a notification (no answer). Waits while the outgoing buffer is full.
    public func notify(_ method: String, _ params: JSONObject? = nil, descriptors: [Int32] = []) async throws {
        try await waitForOutgoingSpace()
        try enqueue(.notification(method: method, params: params, descriptorCount: descriptors.count), descriptors: descriptors)
    }

    /// Sends a notification from code that cannot wait (a synchronous callback, another thread).
    /// Posts keep their order. They cannot wait for the peer to read, so a peer that lets four times
    /// the outgoing bound pile up is disconnected rather than allowed to grow this side's memory.
    public nonisolated func post(_ method: String, _ params: JSONObject? = nil) {
        loop.execute { [self] in
            assumeIsolated { connection in
                try? connection.enqueue(.notification(method: method, params: params, descriptorCount: 0), descriptors: [])
            }
        }
    }

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

    private func makeRequestID() -> RequestID {
        defer { nextID += 1 }
        return .number(nextID)
    }

    private func armTimeoutSweep(before deadline: UInt64) {
        if let sweep = timeoutSweep {
            if sweep.deadline <= deadline { return }
            loop.cancelTimer(sweep.timer)
        }
        let timer = loop.schedule(at: deadline) { [unowned self] in
            self.assumeIsolated { $0.sweepTimeouts() }
        }
        timeoutSweep = (timer, deadline)
    }

    /// Abandons every request whose deadline has passed and re-arms for the earliest one left.
    private func sweepTimeouts() {
        timeoutSweep = nil
        let now = EventLoop.now()
        for (id, request) in pending where request.deadline <= now { abandon(id, because: nil) }
        if let next = pending.values.lazy.map(\.deadline).min() { armTimeoutSweep(before: next) }
    }

    /// Gives up on a pending request: `error` nil means its timeout passed.
    private func abandon(_ id: RequestID, because error: (any Error)?) {
        guard let request = pending.removeValue(forKey: id) else { return }
        abandoned.insert(id)
        abandonedOrder.append(id)
        if abandonedOrder.count > 4096, let oldest = abandonedOrder.popFirst() { abandoned.remove(oldest) }
        try? enqueue(.notification(method: Self.cancelMethod, params: ["id": id.json], descriptorCount: 0), descriptors: [])
        request.continuation.resume(throwing: error ?? RPCError(.timedOut,
            "\(label) did not answer \"\(request.method)\" within \(request.timeout); the request was cancelled"))
    }

    private func complete(_ id: RequestID?, with result: Result<RPCResponse, RPCError>) {
        guard let id, let request = pending.removeValue(forKey: id) else {
            if let id, abandoned.remove(id) != nil { return }  // a late answer to a request we gave up on
            if case .failure(let error) = result, id == nil {
                // The peer could not read something we sent; nothing to resume, but say so.
                report(RPCError(error.code, "\(label) reported an error about a message from this side: \(error.message)"), reply: false)
                return
            }
            report(RPCError(.unknownResponseID, "\(label) sent a response for request id \(id.map(String.init(describing:)) ?? "null"), which this side never sent or was already answered"), reply: false)
            return
        }
        request.continuation.resume(with: result.mapError { $0 })
    }

    // MARK: Output

    private var unsentByteCount: Int { outBuffer.count - outSent }

    private func waitForOutgoingSpace() async throws {
        while unsentByteCount >= configuration.outgoingHighWater {
            flush()
            if unsentByteCount < configuration.outgoingHighWater { break }
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, Error>) in
                // Checked again here: a flush or a close may have happened while this call suspended on entry.
                if let closeReason {
                    continuation.resume(throwing: closeReason)
                } else if unsentByteCount < configuration.outgoingHighWater {
                    continuation.resume()
                } else {
                    spaceWaiters.append(continuation)
                }
            }
        }
    }

    /// Encodes `message` straight into the output buffer and schedules a flush before the loop
    /// sleeps, so a burst of messages leaves in one `sendmsg`.
    private func enqueue(_ message: Message, descriptors: [Int32], owned: Bool = false) throws(RPCError) {
        if let closeReason {
            if owned { descriptors.forEach { _ = Glibc.close($0) } }
            throw closeReason
        }
        if descriptors.count > Message.maximumDescriptorsPerFrame {
            if owned { descriptors.forEach { _ = Glibc.close($0) } }
            throw RPCError(.descriptorMismatch, "a message may carry at most \(Message.maximumDescriptorsPerFrame) file descriptors, not \(descriptors.count)")
        }
        let start = outBuffer.count
        outBuffer.append(contentsOf: [0, 0, 0, 0])
        message.encode(into: &outBuffer)
        let length = outBuffer.count - start - FrameDecoder.headerLength
        guard length <= sendLimit else {
            outBuffer.removeSubrange(start...)
            if owned { descriptors.forEach { _ = Glibc.close($0) } }
            throw RPCError(.messageTooLarge, "a message of \(length) bytes is over the \(sendLimit)-byte frame limit agreed with \(label); pass bulk data through a shared-memory ring or split it")
        }
        outBuffer[start] = UInt8(truncatingIfNeeded: length >> 24)
        outBuffer[start + 1] = UInt8(truncatingIfNeeded: length >> 16)
        outBuffer[start + 2] = UInt8(truncatingIfNeeded: length >> 8)
        outBuffer[start + 3] = UInt8(truncatingIfNeeded: length)
        if owned && !descriptors.isEmpty {
            outDescriptors.append((offset: start, fds: descriptors))
        } else if !descriptors.isEmpty {
            var duplicates: [Int32] = []
            for descriptor in descriptors {
                let copy = fcntl(descriptor, F_DUPFD_CLOEXEC, 0)
                guard copy >= 0 else {
                    let error = IPCSystemError("fcntl(F_DUPFD_CLOEXEC) on descriptor \(descriptor)")
                    duplicates.forEach { _ = Glibc.close($0) }
                    outBuffer.removeSubrange(start...)
                    throw RPCError(.descriptorMismatch, "cannot pass descriptor \(descriptor): \(error)")
                }
                duplicates.append(copy)
            }
            outDescriptors.append((offset: start, fds: duplicates))
        }
        if unsentByteCount > hardOutgoingLimit {
            // Only posts and answers get here (requests and notifications wait for space): the
            // peer stopped reading while this side had to speak. Nothing is replied: it would not be read.
            let reason = RPCError(.overloaded, "\(label) stopped reading: \(unsentByteCount) bytes were waiting to be sent to it, over the \(hardOutgoingLimit)-byte limit")
            configuration.onProtocolViolation?(reason)
            close(reason: reason)
            throw reason
        }
        if !flushScheduled {
            flushScheduled = true
            loop.scheduleFlush(self)
        }
    }

    /// Unsent output past which the connection is dropped: four times the bound at which senders wait.
    private var hardOutgoingLimit: Int { 4 * configuration.outgoingHighWater }

    public nonisolated func flushBeforeSleep() {
        onLoop(Self.flushEntry, 0)
    }

    private func flush() {
        flushScheduled = false
        if case .closed = state, !outBuffer.isEmpty { return }
        while outSent < outBuffer.count {
            var end = outBuffer.count
            var attached: [Int32] = []
            if let first = outDescriptors.first {
                if first.offset == outSent {
                    attached = first.fds
                    if outDescriptors.count > 1 { end = outDescriptors[1].offset }
                } else {
                    end = first.offset  // stop so the next descriptors ride on their own frame's first byte
                }
            }
            let written: Int?
            do {
                written = try outBuffer.withUnsafeBytes { bytes throws(IPCSystemError) in
                    try UnixSocket.send(fd, UnsafeRawBufferPointer(rebasing: bytes[outSent..<end]), descriptors: attached)
                }
            } catch {
                if !closing {
                    let errno = (error as? IPCSystemError)?.errno
                    let peerLeft = errno == .brokenPipe || errno == .connectionReset
                    // A peer that hung up may have said why first (a refusal before the handshake):
                    // read its last words, which close the connection with their own reason.
                    if peerLeft && !readingPaused { readAvailable() }
                    if closeReason == nil {
                        close(reason: RPCError(.connectionClosed, peerLeft ? "\(label) closed the connection" : "cannot write to \(label): \(error)"))
                    }
                }
                return
            }
            guard let written else {
                setWritableInterest(true)
                if outputIsFull { armStallTimer() } else { cancelStallTimer() }
                if readingPaused { resumeReadingIfRoom() }
                return
            }
            if !attached.isEmpty && written > 0 {
                attached.forEach { _ = Glibc.close($0) }
                outDescriptors.removeFirst()
            }
            outSent += written
            bytesWritten += written
        }
        outBuffer.removeAll(keepingCapacity: outBuffer.capacity <= 1 << 20)
        outSent = 0
        setWritableInterest(false)
        cancelStallTimer()
        if readingPaused { resumeReadingIfRoom() }
        let waiters = spaceWaiters
        spaceWaiters.removeAll()
        waiters.forEach { $0.resume() }
    }

    private func setWritableInterest(_ wanted: Bool) {
        guard wanted != wantsWritable, closeReason == nil else { return }
        wantsWritable = wanted
        updateInterest()
    }

    private func updateInterest() {
        loop.setEvents(fd: fd, events: (readingPaused ? 0 : Self.readEvents) | (wantsWritable ? EPOLLOUT.rawValue : 0))
    }

    // MARK: Backpressure

    private var outputIsFull: Bool { unsentByteCount >= configuration.outgoingHighWater }

    /// The peer sends faster than it takes our answers: read nothing more from it until it does,
    /// so its requests wait in its own socket (and its writes block) instead of in our memory.
    private func pauseReading() {
        guard !readingPaused else { return }
        readingPaused = true
        updateInterest()
        cancelUnfinishedFrameTimer()  // the peer cannot finish a frame we do not read
        armStallTimer()
    }

    /// While the output is over the bound, a peer that takes none of it for `stalledReaderTimeout`
    /// is disconnected (`-32008`): senders waiting for room (a heartbeat among them) would wait forever.
    private func armStallTimer() {
        guard stallTimer == nil, closeReason == nil else { return }
        let written = bytesWritten
        stallTimer = loop.schedule(after: configuration.stalledReaderTimeout) { [unowned self] in
            self.assumeIsolated { connection in
                connection.stallTimer = nil
                guard connection.outputIsFull, connection.closeReason == nil else { return }
                guard connection.bytesWritten == written else { return connection.armStallTimer() }
                let reason = RPCError(.overloaded, "\(connection.label) stopped reading: \(connection.unsentByteCount) bytes waited \(connection.configuration.stalledReaderTimeout) to be sent to it")
                connection.configuration.onProtocolViolation?(reason)
                connection.close(reason: reason)
            }
        }
    }

    private func cancelStallTimer() {
        guard let stallTimer else { return }
        loop.cancelTimer(stallTimer)
        self.stallTimer = nil
    }

    private func resumeReadingIfRoom() {
        guard readingPaused, !outputIsFull, closeReason == nil else { return }
        readingPaused = false
        cancelStallTimer()
        updateInterest()
        // Frames already read may wait in the decoder: handle them in a job of their own.
        loop.execute { [self] in
            assumeIsolated { connection in
                guard connection.closeReason == nil, !connection.readingPaused, !connection.framesHeld else { return }
                connection.processFrames()
                if connection.closeReason == nil { connection.readAvailable() }
            }
        }
    }

    // MARK: Unfinished frames

    /// Keeps a deadline on a frame the peer began and has not finished; none while it has none.
    private func watchUnfinishedFrame() {
        guard decoder.bufferedByteCount > 0, !framesHeld, !readingPaused else { return cancelUnfinishedFrameTimer() }
        let offset = decoder.consumedOffset
        if let unfinishedFrame {
            if unfinishedFrame.offset == offset { return }  // the same frame: its deadline stands
            loop.cancelTimer(unfinishedFrame.timer)
        }
        let timer = loop.schedule(after: configuration.frameReadTimeout) { [unowned self] in
            self.assumeIsolated { connection in
                connection.unfinishedFrame = nil
                guard connection.closeReason == nil, connection.decoder.consumedOffset == offset,
                      let unfinished = connection.decoder.unfinishedFrame else { return }
                connection.protocolFailure(RPCError(.frameError, "\(connection.label) sent \(unfinished.progress) and did not finish the frame within \(connection.configuration.frameReadTimeout)"))
            }
        }
        unfinishedFrame = (timer, offset)
    }

    private func cancelUnfinishedFrameTimer() {
        guard let unfinishedFrame else { return }
        loop.cancelTimer(unfinishedFrame.timer)
        self.unfinishedFrame = nil
    }

    // MARK: Input

    public nonisolated func handleIOEvents(_ events: UInt32) {
        onLoop(Self.ioEventsEntry, events)
    }

    // The loop calls these for every message. `assumeIsolated` would make the same check, then
    // allocate twice (`withoutActuallyEscaping` boxes its closure). Entry points stored as escaping
    // closures in a struct need no box, and a struct casts without reabstracting its function.
    // The cast drops only `isolated`, as `assumeIsolated`'s own does.
    private struct LoopEntry: Sendable {
        let call: @Sendable (isolated Connection, _ events: UInt32) -> Void
    }
    private struct UncheckedEntry {
        let call: @Sendable (Connection, _ events: UInt32) -> Void
    }
    private static let ioEventsEntry = LoopEntry { $0.onIOEvents($1) }
    private static let flushEntry = LoopEntry { connection, _ in connection.flush() }

    private nonisolated func onLoop(_ entry: LoopEntry, _ events: UInt32) {
        loop.checkIsolated()
        unsafeBitCast(entry, to: UncheckedEntry.self).call(self, events)
    }

    private func onIOEvents(_ events: UInt32) {
        if events & EPOLLOUT.rawValue != 0 { flush() }
        guard closeReason == nil else { return }
        if readingPaused {
            // Interest is down to writability; a hang-up or error still wakes us, and must end it.
            if events & (EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0 {
                close(reason: RPCError(.connectionClosed, "\(label) hung up with \(unsentByteCount) bytes not taken"))
            }
            return
        }
        if events & (EPOLLIN.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue | EPOLLRDHUP.rawValue) != 0 { readAvailable() }
    }

    private func readAvailable() {
        // A few reads per wake-up, then back to the loop so one busy peer cannot starve the others.
        for _ in 0..<8 where !framesHeld && !readingPaused {
            let buffers = loop.receiveBuffers
            let result: UnixSocket.ReceiveResult
            do {
                result = try UnixSocket.receive(fd, into: buffers)
            } catch {
                close(reason: RPCError(.connectionClosed, "cannot read from \(label): \(error)"))
                return
            }
            switch result {
            case .wouldBlock:
                return
            case .endOfStream:
                do {
                    try decoder.finish()
                    close(reason: RPCError(.connectionClosed, "\(label) closed the connection"))
                } catch {
                    protocolFailure(RPCError(.frameError, "\(label) closed the connection mid-frame: \(error)"), reply: false)
                }
                return
            case .data(let count, let descriptors, let truncated):
                receivedOffset += count
                for descriptor in descriptors { receivedDescriptors.append((fd: descriptor, arrivalEnd: receivedOffset)) }
                if truncated {
                    protocolFailure(RPCError(.descriptorMismatch, "\(label) sent more file descriptors in one message than the kernel delivers; some were dropped"))
                    return
                }
                decoder.append(UnsafeRawBufferPointer(rebasing: buffers.data[0..<count]))
                processFrames()
                if closeReason != nil || count < buffers.data.count { return }
            }
        }
    }

    private func processFrames() {
        defer { if closeReason == nil { watchUnfinishedFrame() } }
        while closeReason == nil {
            if handlersAwaitingFirstTurn > 0 {
                framesHeld = decoder.bufferedByteCount > 0
                break
            }
            if outputIsFull {
                pauseReading()
                break
            }
            let body: ArraySlice<UInt8>
            do {
                guard let frame = try decoder.nextFrame() else { break }
                body = frame
            } catch {
                let code: RPCError.Code = if case .tooLong = error { .messageTooLarge } else { .frameError }
                protocolFailure(RPCError(code, "\(label) sent a bad frame: \(error)"))
                return
            }
            let message: Message
            do {
                message = try Message.decode(body)
            } catch let error as JSONSyntaxError {
                report(RPCError(.parseError, "\(label) sent a frame that is not JSON: \(error)"), replyTo: nil)
                continue
            } catch let error as MessageShapeError {
                report(RPCError(.invalidRequest, "\(label) sent an invalid JSON-RPC message: \(error.reason)"), replyTo: error.id)
                continue
            } catch {
                report(RPCError(.parseError, "\(label) sent an unreadable frame: \(error)"), replyTo: nil)
                continue
            }
            let wanted = message.descriptorCount
            guard receivedDescriptors.count >= wanted else {
                protocolFailure(RPCError(.descriptorMismatch, "\(label) sent a message naming \(wanted) file descriptors, but its frame carried \(receivedDescriptors.count)"))
                return
            }
            guard wanted > 0 else {
                handle(message, descriptors: .none)
                continue
            }
            var descriptors: [Int32] = []
            for _ in 0..<wanted { descriptors.append(receivedDescriptors.removeFirst().fd) }
            handle(message, descriptors: ReceivedDescriptors(descriptors))
        }
        if closeReason == nil, let orphan = receivedDescriptors.first, orphan.arrivalEnd <= decoder.consumedOffset {
            protocolFailure(RPCError(.descriptorMismatch, "\(label) sent \(receivedDescriptors.count) file descriptor(s) that no message named"))
        }
    }

    private func handle(_ message: Message, descriptors: ReceivedDescriptors) {
        if case .handshaking = state {
            handleDuringHandshake(message)
            return
        }
        switch message {
        case .request(let id, let method, let params, _):
            if method == "hello" {
                report(RPCError(.invalidRequest, "\(label) sent a second hello; the handshake happens once per connection"), replyTo: id)
            } else if incoming[id] != nil {
                report(RPCError(.duplicateRequestID, "\(label) reused request id \(id) while that request is still in progress"), replyTo: id)
            } else if incoming.count >= configuration.maximumConcurrentIncomingRequests {
                report(RPCError(.overloaded, "\(label) has more than \(configuration.maximumConcurrentIncomingRequests) requests in progress; wait for answers before sending more"), replyTo: id)
            } else if let answering = handlers.requests[method] {
                let request = IncomingRequest(connection: self, id: id, method: method, params: params ?? [:], descriptors: descriptors)
                switch answering {
                case .immediately(let handler): send(Self.answer(to: request, Result { try handler(request) }))
                case .inTask(let handler): start(handler, request)
                }
            } else {
                try? enqueue(.errorResponse(id: id, error: .methodNotFound(method)), descriptors: [])
            }
        case .notification(let method, let params, _):
            if method == Self.cancelMethod {
                if let value = params?["id"], let id = Message.requestID(value) { incoming[id]??.cancel() }
            } else if let handler = handlers.notifications[method] {
                handler(IncomingNotification(connection: self, method: method, params: params ?? [:], descriptors: descriptors))
            }
            // Unknown notifications are ignored: a newer peer may send ones this version does not know.
        case .response(let id, let result, _):
            complete(id, with: .success(RPCResponse(result: result, descriptors: descriptors)))
        case .errorResponse(let id, let error):
            complete(id, with: .failure(error))
        }
    }

    /// Starts the handler's task preferring this loop, so that what the handler awaits (nonisolated
    /// functions, resumed continuations) stays on this thread instead of going through the global
    /// pool. Given a preference, Swift 6.3 enqueues the task rather than running it at once, so the
    /// frames read after this request wait for its first turn: they are handled in order (§3).
    private func start(_ handler: @escaping RPCHandlers.RequestHandler, _ request: IncomingRequest) {
        let id = request.id
        handlersAwaitingFirstTurn += 1
        incoming[id] = .some(nil)
        let task = Task.immediate(executorPreference: loop) { [self] in
            handlerHadFirstTurn()
            let outcome: Result<RPCReply, any Error>
            do {
                outcome = .success(try await handler(request))
            } catch {
                outcome = .failure(error)
            }
            let answer = Self.answer(to: request, outcome)
            guard incoming.removeValue(forKey: id) != nil else {
                answer.descriptors.forEach { _ = Glibc.close($0) }
                return
            }
            send(answer)
        }
        // Written for a runtime that would start the task at once, too.
        if closeReason != nil {
            task.cancel()  // the handler closed the connection while it ran
        } else if incoming[id] != nil {
            incoming[id] = task  // still running: keep it for rpc.cancel and close
        }
    }

    /// Lets the frames held back behind a handler's start go, once every such handler has started.
    /// They go in a job of their own, after this handler's turn: the loop runs jobs in order.
    private func handlerHadFirstTurn() {
        handlersAwaitingFirstTurn -= 1
        guard handlersAwaitingFirstTurn == 0, framesHeld else { return }
        framesHeld = false
        loop.execute { [self] in
            assumeIsolated { connection in
                connection.processFrames()
                if connection.closeReason == nil { connection.readAvailable() }
            }
        }
    }

    /// What goes back for one request: its id, the message, and the descriptors the message owns.
    private typealias Answer = (id: RequestID, message: Message, descriptors: [Int32])

    /// The answer to `request`, made of what its handler returned or threw.
    private static func answer(to request: IncomingRequest, _ outcome: Result<RPCReply, any Error>) -> Answer {
        let (id, method) = (request.id, request.method)
        switch outcome {
        case .success(let reply):
            return (id, .response(id: id, result: reply.result, descriptorCount: reply.descriptors.count), reply.descriptors)
        case .failure(let error as RPCError):
            return (id, .errorResponse(id: id, error: error), [])
        case .failure(is CancellationError):
            return (id, .errorResponse(id: id, error: RPCError(.requestCancelled, "\"\(method)\" was cancelled")), [])
        case .failure(let error):
            return (id, .errorResponse(id: id, error: RPCError(.internalError, "\"\(method)\" failed: \(error)")), [])
        }
    }

    /// Sends an answer, or an error in its place when it cannot go (too large, bad descriptors).
    private func send(_ answer: Answer) {
        do {
            try enqueue(answer.message, descriptors: answer.descriptors, owned: true)
        } catch {
            try? enqueue(.errorResponse(id: answer.id, error: error), descriptors: [])
        }
    }

    // MARK: Handshake

    private func handleDuringHandshake(_ message: Message) {
        switch (side, message) {
        case (.acceptor, .request(let id, "hello", let params, _)):
            do {
                let hello = try checkedPeerHello(Hello(json: params))
                try configuration.acceptHello?(hello)
                try enqueue(.response(id: id, result: .object(localHello.json), descriptorCount: 0), descriptors: [])
                finishHandshake(hello)
            } catch {
                try? enqueue(.errorResponse(id: id, error: error), descriptors: [])
                close(reason: RPCError(error.code, "handshake with \(label) failed: \(error.message)"))
            }
        case (.initiator, .response(let id, let result, _)) where id == helloRequestID:
            do {
                finishHandshake(try checkedPeerHello(Hello(json: result.objectValue)))
            } catch {
                close(reason: RPCError(error.code, "handshake with \(label) failed: \(error.message)"))
            }
        case (.initiator, .errorResponse(let id, let error)) where id == helloRequestID || id == nil:
            close(reason: RPCError(error.code, "\(label) refused the handshake: \(error.message)"))
        case (_, .request(let id, let method, _, _)):
            try? enqueue(.errorResponse(id: id, error: RPCError(.handshakeRequired, "the first message must be hello, not \"\(method)\"")), descriptors: [])
            close(reason: RPCError(.handshakeRequired, "\(label) sent \"\(method)\" before completing the hello handshake"))
        default:
            close(reason: RPCError(.handshakeRequired, "\(label) sent something other than hello before completing the handshake"))
        }
    }

    private func checkedPeerHello(_ hello: Hello) throws(RPCError) -> Hello {
        guard hello.version == Hello.currentVersion else {
            throw RPCError(.versionMismatch, "the peer speaks MediaRoute IPC version \(hello.version) and this side speaks version \(Hello.currentVersion); install matching versions of both programs")
        }
        guard side.acceptedRoles.contains(hello.role) else {
            throw RPCError(.roleRejected, "a peer with role \"\(hello.role.rawValue)\" is not accepted here (accepted: \(side.acceptedRoles.map(\.rawValue).sorted().joined(separator: ", ")))")
        }
        return hello
    }

    private func finishHandshake(_ hello: Hello) {
        state = .open
        peer = hello
        label = "\(hello.role.rawValue) '\(hello.name)'"
        let agreed = min(localHello.maximumFrameLength, hello.maximumFrameLength)
        decoder.maximumFrameLength = agreed
        sendLimit = agreed
        if let timer = handshakeTimer { loop.cancelTimer(timer) }
        handshakeWaiter?.resume(returning: hello)
        handshakeWaiter = nil
    }

    // MARK: Violations and closing

    /// A fault the stream survives: tell the observer, answer the peer, disconnect if policy says so.
    private func report(_ error: RPCError, replyTo id: RequestID? = nil, reply: Bool = true) {
        configuration.onProtocolViolation?(error)
        if reply { try? enqueue(.errorResponse(id: id, error: error), descriptors: []) }
        if configuration.violationPolicy == .disconnect { close(reason: error) }
    }

    /// A fault that loses the stream: tell the observer and the peer, then disconnect.
    private func protocolFailure(_ error: RPCError, reply: Bool = true) {
        configuration.onProtocolViolation?(error)
        if reply { try? enqueue(.errorResponse(id: nil, error: error), descriptors: []) }
        close(reason: error)
    }

    private func close(reason: RPCError) {
        guard closeReason == nil, !closing else { return }
        closing = true
        flush()  // best effort: the peer should see the error that ends the connection
        state = .closed(reason)
        loop.deregister(fd: fd)
        if let timer = handshakeTimer { loop.cancelTimer(timer) }
        handshakeWaiter?.resume(throwing: reason)
        handshakeWaiter = nil
        let requests = pending
        pending.removeAll()
        if let sweep = timeoutSweep { loop.cancelTimer(sweep.timer) }
        timeoutSweep = nil
        cancelStallTimer()
        cancelUnfinishedFrameTimer()
        for (_, request) in requests {
            request.continuation.resume(throwing: RPCError(.connectionClosed, "\"\(request.method)\" got no answer: \(reason.message)"))
        }
        let waiters = spaceWaiters
        spaceWaiters.removeAll()
        waiters.forEach { $0.resume(throwing: reason) }
        incoming.values.forEach { $0?.cancel() }
        incoming.removeAll()
        receivedDescriptors.forEach { _ = Glibc.close($0.fd) }
        receivedDescriptors.removeAll()
        outDescriptors.forEach { $0.fds.forEach { _ = Glibc.close($0) } }
        outDescriptors.removeAll()
        // Last, so that a peer that sees the end of the stream knows every descriptor it sent is closed.
        _ = Glibc.close(fd)
        outBuffer = []
        outSent = 0
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
    public var unsentByteCountForTesting: Int { unsentByteCount }
}
