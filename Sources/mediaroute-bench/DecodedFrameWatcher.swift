import CLinuxHelpers
import Foundation
import MediaRouteIPC
import Synchronization

/// An `ffmpeg` H.264 decoder reading `input` (a FIFO the receiver records into, or a pipe from
/// another ffmpeg), set up for low delay (one thread, no probing, no buffering, every frame
/// passed through as it is decoded), whose grey frames this reads as they come: each becomes the
/// monotonic time it arrived and the mean brightness of the picture's centre.
final class DecodedFrameWatcher: Sendable {
    struct Frame: Sendable {
        let arrived: UInt64
        let brightness: Double
    }

    private let process: ChildProcess
    private let decoded = Mutex<[Frame]>([])
    private let arrivals = DispatchSemaphore(value: 0)

    /// Starts the decoder on `input` (a path, or `pipe:0` with `standardInput`).
    init(input: String, standardInput: Int32? = nil, width: Int, height: Int) throws {
        var ends: [Int32] = [-1, -1]
        guard clh_pipe_cloexec(&ends) == 0 else { throw BenchmarkError("cannot make a pipe for the decoder: errno \(errno)") }
        do {
            process = try ChildProcess(executable: "/usr/bin/ffmpeg",
                                       arguments: ["-hide_banner", "-loglevel", "error", "-threads", "1", "-probesize", "32", "-analyzeduration", "0",
                                                   "-fflags", "nobuffer", "-flags", "low_delay", "-f", "h264", "-i", input,
                                                   "-fps_mode", "passthrough", "-f", "rawvideo", "-pix_fmt", "gray", "-flush_packets", "1", "pipe:1"],
                                       standardInput: standardInput, standardOutput: ends[1])
        } catch {
            ends.forEach { close($0) }
            throw BenchmarkError("cannot start ffmpeg to decode \(input): \(error)")
        }
        close(ends[1])
        let fd = ends[0]
        Thread.detachNewThread { [self] in
            var picture = [UInt8](repeating: 0, count: width * height)
            while Self.readFully(fd, &picture) {
                let arrived = now()
                let frame = Frame(arrived: arrived, brightness: Self.centreBrightness(picture, width: width, height: height))
                decoded.withLock { $0.append(frame) }
                arrivals.signal()
            }
            close(fd)  // here, not in stop: this thread alone reads it
        }
    }

    private static func readFully(_ fd: Int32, _ buffer: inout [UInt8]) -> Bool {
        var offset = 0
        let count = buffer.count
        while offset < count {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + offset, count - offset) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return false }
            offset += n
        }
        return true
    }

    /// The mean of the middle quarter of the picture, every fourth pixel of every fourth row.
    private static func centreBrightness(_ picture: [UInt8], width: Int, height: Int) -> Double {
        var sum = 0, count = 0
        for y in stride(from: height * 3 / 8, to: height * 5 / 8, by: 4) {
            for x in stride(from: width * 3 / 8, to: width * 5 / 8, by: 4) {
                sum += Int(picture[y * width + x])
                count += 1
            }
        }
        return Double(sum) / Double(max(count, 1))
    }

    /// The next decoded frame, waiting up to `timeout` for it (blocks: call it off the cooperative pool).
    func next(within timeout: Duration) -> Frame? {
        guard arrivals.wait(timeout: .now() + .milliseconds(Int(timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000))) == .success else { return nil }
        return decoded.withLock { $0.removeFirst() }
    }

    /// Stops the decoder by PID; the reading thread ends with its output.
    func stop() async {
        _ = await process.terminate(grace: .seconds(2))
    }
}
