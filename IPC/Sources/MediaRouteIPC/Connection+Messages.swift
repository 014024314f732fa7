import Glibc

/// Handling what arrives: the handshake's messages, the peer's calls (answered at once or from a
/// task), answers to ours, and violations.
extension Connection {
    func handle(_ message: Message, descriptors: ReceivedDescriptors) {
        if case .handshaking = state {
            handleDuringHandshake(message)
            return
        }
        switch message {
        case .request(let id, let method, let params, _):
            if method == "hello" {
                report(RPCError(.invalidRequest, "\(label) sent a second hello; the handshake happens once per connection"), replyTo: id)
            } else if incoming.contains(id) {
                report(RPCError(.duplicateRequestID, "\(label) reused request id \(id) while that request is still in progress"), replyTo: id)
            } else if incoming.count >= configuration.maximumConcurrentIncomingRequests {
                report(RPCError(.overloaded, "\(label) has more than \(configuration.maximumConcurrentIncomingRequests) requests in progress; wait for answers before sending more"), replyTo: id)
            } else if let answering = requestHandler(for: method) {
                let request = IncomingRequest(connection: self, id: id, method: method, params: params ?? [:], descriptors: descriptors)
                switch answering {
                case .immediately(let handler): send(Self.answer(to: request, Result { try handler(request) }))
                case .inTask(let handler): start(handler, request)
                case .onMainActor(let handler): answerOnMainActor(handler, request)
                }
            } else {
                try? enqueue(.errorResponse(id: id, error: .methodNotFound(method)), descriptors: [])
            }
        case .notification(let method, let params, _):
            if method == Self.cancelMethod {
                if let value = params?["id"], let id = Message.requestID(value) { incoming.cancel(id) }
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

    /// The handler for `method`. The last one found is kept: a run of calls to one method (the
    /// usual traffic) then hashes no method name.
    private func requestHandler(for method: String) -> RPCHandlers.Answering? {
        if let last = lastRequestHandler, last.method == method { return last.answering }
        guard let answering = handlers.requests[method] else { return nil }
        lastRequestHandler = (method, answering)
        return answering
    }

    /// Runs a main-actor handler as its request is read when the loop allows it (see
    /// `EventLoop.runAsMainQueueJob`) and no earlier one waits in a task; else in a task. Reports
    /// the handler makes go into the output as it makes them, so its answer follows them, behind
    /// any work queued meanwhile.
    private func answerOnMainActor(_ handler: @escaping RPCHandlers.MainActorRequestHandler, _ request: IncomingRequest) {
        var outcome: Result<RPCReply, any Error>?
        let ran = mainActorRequestsInTasks == 0 && loop.runAsMainQueueJob {
            outcome = Result { try MainActor.assumeIsolated { try handler(request) } }
        }
        guard ran, let outcome else {
            mainActorRequestsInTasks += 1
            return start({ [self] request in
                defer { mainActorTaskAnswered() }
                return try await MainActor.run { try handler(request) }
            }, request)
        }
        let answer = Self.answer(to: request, outcome)
        if loop.hasQueuedWork {
            loop.execute { [self] in assumeIsolated { $0.send(answer) } }
        } else {
            send(answer)
        }
    }

    /// Counts a main-actor request's task out; its handler task runs on the loop (`start`).
    private nonisolated func mainActorTaskAnswered() {
        assumeIsolated { $0.mainActorRequestsInTasks -= 1 }
    }

    /// Starts the handler's task preferring this loop, so that what the handler awaits (nonisolated
    /// functions, resumed continuations) stays on this thread instead of going through the global
    /// pool. Given a preference, Swift 6.3 enqueues the task rather than running it at once, so the
    /// frames read after this request wait for its first turn: they are handled in order (§3).
    private func start(_ handler: @escaping RPCHandlers.RequestHandler, _ request: IncomingRequest) {
        let id = request.id
        incoming.begin(id)
        let task = Task.immediate(executorPreference: loop) { [self] in
            if incoming.handlerHadFirstTurn() { processHeldFrames(unlessPaused: false) }
            let outcome: Result<RPCReply, any Error>
            do {
                outcome = .success(try await handler(request))
            } catch {
                outcome = .failure(error)
            }
            let answer = Self.answer(to: request, outcome)
            guard incoming.finish(id) else {
                answer.descriptors.forEach { _ = Glibc.close($0) }
                return
            }
            send(answer)
        }
        // Written for a runtime that would start the task at once, too.
        if closeReason != nil {
            task.cancel()  // the handler closed the connection while it ran
        } else {
            incoming.attach(task, to: id)  // if still running: kept for rpc.cancel and close
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
        switch handshake.step(for: message, peer: label, acceptHello: configuration.acceptHello) {
        case .answer(let id, let hello):
            do {
                try enqueue(.response(id: id, result: .object(handshake.localHello.json), descriptorCount: 0), descriptors: [])
                finishHandshake(hello)
            } catch {
                try? enqueue(.errorResponse(id: id, error: error), descriptors: [])
                close(reason: Handshake.failure(error, label))
            }
        case .finish(let hello):
            finishHandshake(hello)
        case .refuse(let id, let error, let reason):
            try? enqueue(.errorResponse(id: id, error: error), descriptors: [])
            close(reason: reason)
        case .close(let reason):
            close(reason: reason)
        }
    }

    private func finishHandshake(_ hello: Hello) {
        state = .open
        peer = hello
        label = "\(hello.role.rawValue) '\(hello.name)'"
        let agreed = handshake.agreedFrameLength(with: hello)
        input.decoder.maximumFrameLength = agreed
        sendLimit = agreed
        if let timer = handshake.timer { loop.cancelTimer(timer) }
        handshake.waiter?.resume(returning: hello)
        handshake.waiter = nil
    }

    // MARK: Violations

    /// A fault the stream survives: tell the observer, answer the peer, disconnect if policy says so.
    func report(_ error: RPCError, replyTo id: RequestID? = nil, reply: Bool = true) {
        configuration.onProtocolViolation?(error)
        if reply { try? enqueue(.errorResponse(id: id, error: error), descriptors: []) }
        if configuration.violationPolicy == .disconnect { close(reason: error) }
    }

    /// A fault that loses the stream: tell the observer and the peer, then disconnect.
    func protocolFailure(_ error: RPCError, reply: Bool = true) {
        configuration.onProtocolViolation?(error)
        if reply { try? enqueue(.errorResponse(id: nil, error: error), descriptors: []) }
        close(reason: error)
    }
}
