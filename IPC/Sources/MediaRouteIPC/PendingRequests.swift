import DequeModule

/// The requests a connection sent and waits on: their ids, continuations and deadlines, and the
/// ids it gave up on.
///
/// A value owned by `Connection` and touched only on its loop, so the bookkeeping of correlation,
/// timeouts and cancellation lives apart from the orchestration and needs no lock of its own.
struct PendingRequests {
    struct Request {
        let method: String
        let continuation: UnsafeContinuation<RPCResponse, Error>
        /// `EventLoop.now()` after which the request is abandoned.
        let deadline: UInt64
        let timeout: Duration
    }

    /// What an answer's id names.
    enum Claim {
        case waiting(Request)
        /// A request this side gave up on (cancelled, timed out): its late answer is dropped quietly.
        case abandoned
        case unknown
    }

    /// Our ids are increasing integers (IPC/README.md §7), never reused.
    private var nextID: Int64 = 1
    /// The latest request, kept out of `requests`: one request at a time (the common case, a
    /// caller awaiting each answer) then costs no hashing at all.
    private var latest: (id: RequestID, request: Request)?
    private var requests: [RequestID: Request] = [:]
    /// Remembered so that a late answer is not taken for a violation; the oldest are forgotten.
    private var abandoned = Set<RequestID>()
    private var abandonedOrder = Deque<RequestID>()
    private static let abandonedMemory = 4096
    /// One timer for all pending requests, due at (or before) the earliest deadline: a request
    /// costs no timer of its own, and nothing piles up in the loop while answers come in time.
    var timeoutSweep: (timer: EventLoop.TimerHandle, deadline: UInt64)?

    var count: Int { requests.count + (latest == nil ? 0 : 1) }

    mutating func makeID() -> RequestID {
        defer { nextID += 1 }
        return .number(nextID)
    }

    mutating func add(_ request: Request, id: RequestID) {
        if let previous = latest { requests[previous.id] = previous.request }
        latest = (id, request)
    }

    /// Takes `id` out of the requests waiting, wherever it is kept.
    private mutating func remove(_ id: RequestID) -> Request? {
        if let latest, latest.id == id {
            self.latest = nil
            return latest.request
        }
        return requests.isEmpty ? nil : requests.removeValue(forKey: id)
    }

    /// Takes the request an answer names, if any is waiting.
    mutating func claim(_ id: RequestID) -> Claim {
        if let request = remove(id) { return .waiting(request) }
        return !abandoned.isEmpty && abandoned.remove(id) != nil ? .abandoned : .unknown
    }

    /// Stops waiting for `id` and remembers it, so its answer (if one crosses on the wire) is dropped.
    mutating func abandon(_ id: RequestID) -> Request? {
        guard let request = remove(id) else { return nil }
        rememberAbandoned(id)
        return request
    }

    /// Remembers `id` as given up on: its answer, if one comes, is dropped.
    mutating func rememberAbandoned(_ id: RequestID) {
        abandoned.insert(id)
        abandonedOrder.append(id)
        if abandonedOrder.count > Self.abandonedMemory, let oldest = abandonedOrder.popFirst() { abandoned.remove(oldest) }
    }

    /// The ids whose deadline has passed by `now`.
    func expired(at now: UInt64) -> [RequestID] {
        var ids = requests.compactMap { $0.value.deadline <= now ? $0.key : nil }
        if let latest, latest.request.deadline <= now { ids.append(latest.id) }
        return ids
    }

    var earliestDeadline: UInt64? {
        let earliest = requests.values.lazy.map(\.deadline).min()
        guard let latest else { return earliest }
        return min(earliest ?? .max, latest.request.deadline)
    }

    /// Every request still waiting, forgotten: the connection closed.
    mutating func removeAll() -> [Request] {
        var all = Array(requests.values)
        if let latest { all.append(latest.request) }
        requests.removeAll()
        latest = nil
        return all
    }
}
