import Foundation
import Glibc
import MediaRouteIPC

extension LocalMediaPlayer {
    /// Hands over the PCM ffmpeg has decoded, waiting up to `timeout` for it; `.ended` once the
    /// media has been read to its end, has failed (see `failure`), or was stopped.
    public func read(into buffer: UnsafeMutableBufferPointer<Int16>, waitingUpTo timeout: Duration) -> PCMRead {
        let deadline = ContinuousClock.now + timeout
        let bytesPerFrame = format.bytesPerFrame
        let capacity = buffer.count / format.channels * bytesPerFrame
        guard capacity > 0, let base = UnsafeMutableRawPointer(buffer.baseAddress) else { return .starved }
        while true {
            let current = state.withLock { state -> (FFmpegDecoder, [UInt8])? in
                guard state.phase == .decoding, let decoder = state.decoder else { return nil }
                return (decoder, state.carry)
            }
            guard let (decoder, carry) = current else { return finished() }
            if !carry.isEmpty { carry.withUnsafeBytes { base.copyMemory(from: $0.baseAddress!, byteCount: $0.count) } }
            let count = Glibc.read(decoder.output, base + carry.count, capacity - carry.count)
            if count > 0 {
                let total = carry.count + count
                let frames = total / bytesPerFrame
                let taken = state.withLock { state -> (gain: Int32, report: (@Sendable (Event) -> Void)?)? in
                    guard state.decoder === decoder else { return nil }  // sought meanwhile: these samples are stale
                    state.carry = Array(UnsafeRawBufferPointer(start: base + frames * bytesPerFrame, count: total % bytesPerFrame))
                    guard frames > 0 else { return (0, nil) }
                    state.framesRead += frames
                    let report = !state.reportedStart
                    state.reportedStart = true
                    let gain = state.isMuted ? 0 : Int32((state.volume * 65536).rounded())
                    return (gain, report ? state.onEvent : nil)
                }
                guard let taken, frames > 0 else { continue }
                Self.apply(gain: taken.gain, to: UnsafeMutableBufferPointer(rebasing: buffer[0..<frames * format.channels]))
                taken.report?(.started)
                return .frames(frames)
            }
            if count == 0 {
                // ffmpeg closed its output: it has ended, or is about to; its status says how.
                guard let termination = decoder.waitForEnd(until: deadline) else { return .starved }
                decoder.drainErrors()
                decoderEnded(decoder, termination)
                continue
            }
            guard errno == EAGAIN || errno == EINTR else {
                fail("playback of \(media.url.absoluteString) failed: reading ffmpeg's output failed (\(String(cString: strerror(errno))))", replacing: decoder)
                continue
            }
            let remaining = deadline - .now
            guard remaining > .zero else { return .starved }
            // Wait for PCM, draining standard error meanwhile (a chatty ffmpeg must never block on it).
            var descriptors = [pollfd(fd: decoder.output, events: Int16(POLLIN), revents: 0)]
            if let errors = decoder.pendingErrors { descriptors.append(pollfd(fd: errors, events: Int16(POLLIN), revents: 0)) }
            let milliseconds = Int32(min(max((remaining + .nanoseconds(999_999)).milliseconds, 1), 60_000))
            _ = poll(&descriptors, nfds_t(descriptors.count), milliseconds)
            if descriptors.count > 1, descriptors[1].revents != 0 { decoder.drainErrors() }
        }
    }

    /// `.ended` for a reader, reporting the end once if it was not reported already.
    private func finished() -> PCMRead {
        let report = state.withLock { state -> (@Sendable (Event) -> Void)? in
            guard state.phase == .ended, !state.reportedEnd else { return nil }
            state.reportedEnd = true
            return state.onEvent
        }
        report?(.ended)
        return .ended
    }

    /// The current decoder's ffmpeg has ended: at the end of the media, or failing.
    private func decoderEnded(_ decoder: FFmpegDecoder, _ termination: ChildProcess.Termination) {
        let errors = decoder.errorText
        // ffmpeg treats a read error as the end of its input and exits with 0: its words tell them apart.
        if termination == .exited(0), !FFmpegFailure.inputFailed(errors) {
            state.withLock { state in
                guard state.decoder === decoder else { return }
                state.decoder = nil
                state.phase = .ended
            }
            return
        }
        let reason = FFmpegFailure.reason(errors) ?? "ffmpeg \(termination)"
        fail("playback of \(media.url.absoluteString) stopped at \(String(format: "%.1f", position)) s: \(reason)", replacing: decoder)
    }

    /// Scales samples by `gain` (65536 is unity): an integer multiply per sample.
    static func apply(gain: Int32, to samples: UnsafeMutableBufferPointer<Int16>) {
        guard gain != 65536 else { return }
        guard gain != 0 else { return samples.update(repeating: 0) }
        for index in samples.indices {
            samples[index] = Int16(truncatingIfNeeded: (Int32(samples[index]) * gain) >> 16)
        }
    }
}
