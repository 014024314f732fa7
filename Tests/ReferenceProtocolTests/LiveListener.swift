import Foundation
import MediaRouteIPC
import PrivateDaemons
import Synchronization
import TestSupport

/// Listens to a private PulseAudio's sink while it plays: parec's raw samples (asked for with 10 ms
/// latency) are read on a thread of its own as they come, and each 5 ms block is marked loud or not
/// at the moment it arrived, on the test's clock. For comparing what is heard with what is seen at
/// the same moment (a WAV file's samples carry no time of their own). Stopped by PID.
final class LiveListener: Sendable {
    private let child: ChildProcess
    private let blocks = Mutex<[(at: ContinuousClock.Instant, loud: Bool)]>([])
    private let ended = DispatchSemaphore(value: 0)
    static let rate = 48_000, block = 240

    init(_ pulse: PrivatePulseAudio) throws {
        var pipe: [Int32] = [0, 0]
        guard Glibc.pipe(&pipe) == 0 else { throw TestTimeout(what: "a pipe for parec") }
        let environment = ProcessInfo.processInfo.environment.merging(pulse.environment) { _, new in new }.map { "\($0.key)=\($0.value)" }
        do {
            child = try ChildProcess(executable: "/usr/bin/parec", arguments: ["--device=\(PrivatePulseAudio.sink).monitor", "--raw", "--format=float32le",
                                                                               "--rate=\(Self.rate)", "--channels=1", "--latency-msec=10"],
                                     environment: environment, standardOutput: pipe[1])
        } catch {
            close(pipe[0])
            close(pipe[1])
            throw error
        }
        close(pipe[1])
        let fd = pipe[0]
        Thread.detachNewThread { [self] in
            defer {
                close(fd)
                ended.signal()
            }
            var samples = [Float](repeating: 0, count: Self.block * 64)
            var filled = 0  // bytes
            while true {
                let count = samples.withUnsafeMutableBytes { read(fd, $0.baseAddress! + filled, $0.count - filled) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { return }
                let now = ContinuousClock.now
                filled += count
                let whole = filled / (Self.block * 4)
                // The newest sample arrived now; each block before it that much earlier.
                let heard = (0..<whole).map { index -> (at: ContinuousClock.Instant, loud: Bool) in
                    var energy: Float = 0
                    for sample in samples[(index * Self.block)..<((index + 1) * Self.block)] { energy += sample * sample }
                    let after = filled / 4 - (index + 1) * Self.block
                    return (now - .microseconds(after * 1_000_000 / Self.rate), (energy / Float(Self.block)).squareRoot() > 0.03)
                }
                blocks.withLock { $0 += heard }
                let used = whole * Self.block * 4
                samples.withUnsafeMutableBytes { bytes in
                    if filled > used { bytes.baseAddress!.copyMemory(from: bytes.baseAddress! + used, byteCount: filled - used) }
                }
                filled -= used
            }
        }
    }

    /// Each 5 ms block heard so far: when it was, and whether it was loud.
    var heard: [(at: ContinuousClock.Instant, loud: Bool)] { blocks.withLock { $0 } }

    /// Stops parec by PID and waits for the reading thread.
    func stop() async {
        _ = await child.terminate(grace: .seconds(2))
        ended.wait()
    }
}
