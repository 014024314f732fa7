import CLinuxHelpers
import Foundation
import MediaRouteIPC
import ScreenCapture

/// What capturing a screen costs in CPU, the two ways mirroring could take it: our MIT-SHM grab and
/// I420 scaling in process, and an `ffmpeg -f x11grab` child (MIT-SHM too) converting to I420 and
/// writing each frame into a pipe we drain. CPU seconds per second of capture, all processes
/// counted, over the same window each.
enum CaptureCostComparison {
    struct Costs {
        let inProcess: Double
        let ffmpegChild: Double
    }

    static func measure(display: String, width: Int, height: Int, frameRate: Int, seconds: Int = 3) async throws -> Costs {
        let before = processCPU()
        let capture = try ScreenCaptureSession(.init(display: display, width: width, height: height, frameRate: frameRate))
        try capture.start { _, _ in .next }
        try await Task.sleep(for: .seconds(seconds))  // the measuring window
        capture.stop()
        let inProcess = (processCPU() - before) / Double(seconds)

        var ends: [Int32] = [-1, -1]
        guard clh_pipe_cloexec(&ends) == 0 else { throw BenchmarkError("cannot make a pipe: errno \(errno)") }
        let child: ChildProcess
        do {
            child = try ChildProcess(executable: "/usr/bin/ffmpeg", arguments: [
                "-hide_banner", "-loglevel", "error", "-f", "x11grab", "-draw_mouse", "0", "-framerate", "\(frameRate)", "-video_size", "\(width)x\(height)",
                "-i", display, "-pix_fmt", "yuv420p", "-f", "rawvideo", "pipe:1"], standardOutput: ends[1])
        } catch {
            ends.forEach { close($0) }
            throw BenchmarkError("cannot start ffmpeg -f x11grab: \(error)")
        }
        close(ends[1])
        let fd = ends[0]
        Thread.detachNewThread {
            var buffer = [UInt8](repeating: 0, count: 1 << 20)
            while buffer.withUnsafeMutableBytes({ read(fd, $0.baseAddress, $0.count) }) > 0 {}
            close(fd)
        }
        try await Task.sleep(for: .seconds(1))  // ffmpeg's own start-up is not capture
        let (childStart, ownStart) = (childCPU(child.pid), processCPU())
        try await Task.sleep(for: .seconds(seconds))
        let (childEnd, ownEnd) = (childCPU(child.pid), processCPU())
        _ = await child.terminate(grace: .seconds(2))
        return Costs(inProcess: inProcess, ffmpegChild: (childEnd - childStart + ownEnd - ownStart) / Double(seconds))
    }

    private static func processCPU() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    /// utime + stime of a child, from /proc/PID/stat (fields 14 and 15, after the command's parentheses).
    private static func childCPU(_ pid: Int32) -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let close = stat.lastIndex(of: ")") else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}
