import CLinuxHelpers
import Glibc

/// Reading: socket readiness, frames out of the stream, their descriptors, and when reading stops.
extension Connection {
    public nonisolated func handleIOEvents(_ events: UInt32) {
        onLoop(Self.ioEventsEntry, events)
    }

    private static let ioEventsEntry = LoopEntry { $0.onIOEvents($1) }

    private func onIOEvents(_ events: UInt32) {
        if events & EPOLLOUT.rawValue != 0 { flush() }
        guard closeReason == nil else { return }
        if readingPaused {
            // Interest is down to writability; a hang-up or error still wakes us, and must end it.
            if events & (EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0 {
                close(reason: RPCError(.connectionClosed, "\(label) hung up with \(output.unsentByteCount) bytes not taken"))
            }
            return
        }
        if events & (EPOLLIN.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue | EPOLLRDHUP.rawValue) != 0 { readAvailable() }
    }

    func readAvailable() {
        // A few reads per wake-up, then back to the loop so one busy peer cannot starve the others.
        for _ in 0..<8 where !incoming.framesHeld && !readingPaused {
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
                    try input.decoder.finish()
                    close(reason: RPCError(.connectionClosed, "\(label) closed the connection"))
                } catch {
                    protocolFailure(RPCError(.frameError, "\(label) closed the connection mid-frame: \(error)"), reply: false)
                }
                return
            case .data(let count, let descriptors, let truncated):
                input.received(byteCount: count, descriptors: descriptors)
                if truncated {
                    protocolFailure(RPCError(.descriptorMismatch, "\(label) sent more file descriptors in one message than the kernel delivers; some were dropped"))
                    return
                }
                input.decoder.append(UnsafeRawBufferPointer(rebasing: buffers.data[0..<count]))
                processFrames()
                if closeReason != nil || count < buffers.data.count { return }
            }
        }
    }

    /// Handles the complete frames read, in order, until one must wait (a handler's first turn,
    /// output over the bound) or none is left.
    func processFrames() {
        defer { if closeReason == nil { watchUnfinishedFrame() } }
        while closeReason == nil {
            if incoming.mustHoldFrames {
                incoming.framesHeld = input.decoder.bufferedByteCount > 0
                break
            }
            if output.isFull {
                pauseReading()
                break
            }
            let body: ArraySlice<UInt8>
            do {
                guard let frame = try input.decoder.nextFrame() else { break }
                body = frame
            } catch {
                let code: RPCError.Code = if case .tooLong = error { .messageTooLarge } else { .frameError }
                protocolFailure(RPCError(code, "\(label) sent a bad frame: \(error)"))
                return
            }
            let message: Message
            do {
                message = try body.withUnsafeBufferPointer { try Message.decode($0) }
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
            guard input.descriptorCount >= wanted else {
                protocolFailure(RPCError(.descriptorMismatch, "\(label) sent a message naming \(wanted) file descriptors, but its frame carried \(input.descriptorCount)"))
                return
            }
            guard wanted > 0 else {
                handle(message, descriptors: .none)
                continue
            }
            handle(message, descriptors: ReceivedDescriptors(input.claimDescriptors(wanted)))
        }
        if closeReason == nil, input.hasOrphanDescriptor {
            protocolFailure(RPCError(.descriptorMismatch, "\(label) sent \(input.descriptorCount) file descriptor(s) that no message named"))
        }
    }

    /// Handles the frames that waited (for a handler's first turn, for room), in a job of their own.
    func processHeldFrames(unlessPaused: Bool) {
        loop.execute { [self] in
            assumeIsolated { connection in
                if unlessPaused {
                    guard connection.closeReason == nil, !connection.readingPaused, !connection.incoming.framesHeld else { return }
                }
                connection.processFrames()
                if connection.closeReason == nil { connection.readAvailable() }
            }
        }
    }

    // MARK: Backpressure

    /// The peer sends faster than it takes our answers: read nothing more from it until it does,
    /// so its requests wait in its own socket (and its writes block) instead of in our memory.
    private func pauseReading() {
        guard !readingPaused else { return }
        readingPaused = true
        updateInterest()
        cancelUnfinishedFrameTimer()  // the peer cannot finish a frame we do not read
        armStallTimer()
    }

    func resumeReadingIfRoom() {
        guard readingPaused, !output.isFull, closeReason == nil else { return }
        readingPaused = false
        cancelStallTimer()
        updateInterest()
        // Frames already read may wait in the decoder: handle them in a job of their own.
        processHeldFrames(unlessPaused: true)
    }

    // MARK: Unfinished frames

    /// Keeps a deadline on a frame the peer began and has not finished; none while it has none.
    private func watchUnfinishedFrame() {
        guard input.decoder.bufferedByteCount > 0, !incoming.framesHeld, !readingPaused else { return cancelUnfinishedFrameTimer() }
        let offset = input.decoder.consumedOffset
        if let unfinished = input.unfinishedFrame {
            if unfinished.offset == offset { return }  // the same frame: its deadline stands
            loop.cancelTimer(unfinished.timer)
        }
        let timer = loop.schedule(after: configuration.frameReadTimeout) { [unowned self] in
            self.assumeIsolated { connection in
                connection.input.unfinishedFrame = nil
                guard connection.closeReason == nil, connection.input.decoder.consumedOffset == offset,
                      let unfinished = connection.input.decoder.unfinishedFrame else { return }
                connection.protocolFailure(RPCError(.frameError, "\(connection.label) sent \(unfinished.progress) and did not finish the frame within \(connection.configuration.frameReadTimeout)"))
            }
        }
        input.unfinishedFrame = (timer, offset)
    }

    func cancelUnfinishedFrameTimer() {
        guard let unfinished = input.unfinishedFrame else { return }
        loop.cancelTimer(unfinished.timer)
        input.unfinishedFrame = nil
    }
}
