/// The peer's requests this side is answering, and the order in which frames may be handled.
///
/// Owned by `Connection`, on its loop. It keeps the handler tasks for `rpc.cancel` and close, the
/// bound on requests in progress, and the rule that frames read after a request wait until that
/// request's handler task has had its first turn (IPC/README.md §3: frames are handled in order).
struct IncomingRequests {
    /// Each request in progress, with its handler's task (nil until `start` has the task in hand,
    /// and for good if the handler finished before that or answers at once).
    private var tasks: [RequestID: Task<Void, Never>?] = [:]
    /// Handler tasks started but not yet given their first turn on the loop.
    private var awaitingFirstTurn = 0
    /// Whether frames already read wait for those handlers' first turn.
    var framesHeld = false

    var count: Int { tasks.count }

    func contains(_ id: RequestID) -> Bool { !tasks.isEmpty && tasks[id] != nil }

    /// Whether frames must wait: a handler started for an earlier frame has not had its first turn.
    var mustHoldFrames: Bool { awaitingFirstTurn > 0 }

    /// Records a handler task about to start for `id`.
    mutating func begin(_ id: RequestID) {
        awaitingFirstTurn += 1
        tasks[id] = .some(nil)
    }

    /// Keeps the task of a handler still running, for `rpc.cancel` and close.
    mutating func attach(_ task: Task<Void, Never>, to id: RequestID) {
        if tasks[id] != nil { tasks[id] = task }
    }

    /// Counts a handler's first turn; true when the frames held back behind it may now go.
    mutating func handlerHadFirstTurn() -> Bool {
        awaitingFirstTurn -= 1
        guard awaitingFirstTurn == 0, framesHeld else { return false }
        framesHeld = false
        return true
    }

    /// Forgets `id` as its answer goes out; false if it was forgotten already (the connection closed).
    mutating func finish(_ id: RequestID) -> Bool {
        tasks.removeValue(forKey: id) != nil
    }

    /// The peer's `rpc.cancel`.
    func cancel(_ id: RequestID) {
        tasks[id]??.cancel()
    }

    /// Cancels every handler and forgets every request: the connection closed.
    mutating func cancelAll() {
        tasks.values.forEach { $0?.cancel() }
        tasks.removeAll()
    }
}
