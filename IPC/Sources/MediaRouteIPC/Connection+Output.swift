import CLinuxHelpers
import Glibc

/// Writing: encoding into the outgoing buffer, flushing it before the loop sleeps, waiting for
/// room, and dropping a peer that stops reading.
extension Connection {
    /// Waits until the unsent output is below the bound (senders of requests and notifications).
    func waitForOutgoingSpace() async throws {
        while output.isFull {
            flush()
            if !output.isFull { break }
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, Error>) in
                // Checked again here: a flush or a close may have happened while this call suspended on entry.
                if let closeReason {
                    continuation.resume(throwing: closeReason)
                } else if !output.isFull {
                    continuation.resume()
                } else {
                    output.spaceWaiters.append(continuation)
                }
            }
        }
    }

    /// Encodes `message` straight into the output buffer and schedules a flush before the loop
    /// sleeps, so a burst of messages leaves in one `sendmsg`.
    func enqueue(_ message: Message, descriptors: [Int32], owned: Bool = false) throws(RPCError) {
        if let closeReason {
            if owned { descriptors.forEach { _ = Glibc.close($0) } }
            throw closeReason
        }
        try output.append(message, descriptors: descriptors, owned: owned, frameLimit: sendLimit, peer: label)
        if output.isOverHardLimit {
            // Only posts and answers get here (requests and notifications wait for space): the
            // peer stopped reading while this side had to speak. Nothing is replied: it would not be read.
            let reason = RPCError(.overloaded, "\(label) stopped reading: \(output.unsentByteCount) bytes were waiting to be sent to it, over the \(output.hardLimit)-byte limit")
            configuration.onProtocolViolation?(reason)
            close(reason: reason)
            throw reason
        }
        if !flushScheduled {
            flushScheduled = true
            loop.scheduleFlush(self)
        }
    }

    public nonisolated func flushBeforeSleep() {
        onLoop(Self.flushEntry, 0)
    }

    private static let flushEntry = LoopEntry { connection, _ in connection.flush() }

    func flush() {
        flushScheduled = false
        writeOutput(readingLastWords: true)
    }

    /// Writes what waits. When the peer hung up, its last words are read first if
    /// `readingLastWords` (not for a main-queue job's post: see `postFromMainQueueJob`).
    func writeOutput(readingLastWords: Bool) {
        if case .closed = state, !output.isEmpty { return }
        let allWritten: Bool
        do {
            allWritten = try output.write(to: fd)
        } catch {
            if !closing {
                let peerLeft = error.errno == .brokenPipe || error.errno == .connectionReset
                // A peer that hung up may have said why first (a refusal before the handshake):
                // read its last words, which close the connection with their own reason.
                if peerLeft && readingLastWords && !readingPaused { readAvailable() }
                if closeReason == nil {
                    close(reason: RPCError(.connectionClosed, peerLeft ? "\(label) closed the connection" : "cannot write to \(label): \(error)"))
                }
            }
            return
        }
        guard allWritten else {
            setWritableInterest(true)
            if output.isFull { armStallTimer() } else { cancelStallTimer() }
            if readingPaused { resumeReadingIfRoom() }
            return
        }
        setWritableInterest(false)
        cancelStallTimer()
        if readingPaused { resumeReadingIfRoom() }
        output.takeSpaceWaiters().forEach { $0.resume() }
    }

    private func setWritableInterest(_ wanted: Bool) {
        guard wanted != wantsWritable, closeReason == nil else { return }
        wantsWritable = wanted
        updateInterest()
    }

    func updateInterest() {
        loop.setEvents(fd: fd, events: (readingPaused ? 0 : Self.readEvents) | (wantsWritable ? EPOLLOUT.rawValue : 0))
    }

    /// While the output is over the bound, a peer that takes none of it for `stalledReaderTimeout`
    /// is disconnected (`-32008`): senders waiting for room (a heartbeat among them) would wait forever.
    func armStallTimer() {
        guard output.stallTimer == nil, closeReason == nil else { return }
        let written = output.bytesWritten
        output.stallTimer = loop.schedule(after: configuration.stalledReaderTimeout) { [unowned self] in
            self.assumeIsolated { connection in
                connection.output.stallTimer = nil
                guard connection.output.isFull, connection.closeReason == nil else { return }
                guard connection.output.bytesWritten == written else { return connection.armStallTimer() }
                let reason = RPCError(.overloaded, "\(connection.label) stopped reading: \(connection.output.unsentByteCount) bytes waited \(connection.configuration.stalledReaderTimeout) to be sent to it")
                connection.configuration.onProtocolViolation?(reason)
                connection.close(reason: reason)
            }
        }
    }

    func cancelStallTimer() {
        guard let timer = output.stallTimer else { return }
        loop.cancelTimer(timer)
        output.stallTimer = nil
    }
}
