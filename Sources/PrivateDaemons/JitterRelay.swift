import CLinuxHelpers
import Foundation
import MediaRouteIPC
import Synchronization

/// A bad network between two UDP endpoints on loopback, for tests and benchmarks (this kernel has no
/// `netem`): datagrams sent to `port` are passed on to the target after a random delay (uniform up to
/// `maximumDelay`, so that they overtake each other: reordering), and one in `dropEvery` is dropped.
/// Seeded: the same network every run. A thread of its own; `stop` ends it (by a pipe, not a timeout).
public final class JitterRelay: Sendable {
    public struct Network: Sendable {
        public var maximumDelay: Duration
        /// 0: none dropped.
        public var dropEvery: Int
        public var seed: UInt64
        public init(maximumDelay: Duration, dropEvery: Int = 0, seed: UInt64 = 20) {
            self.maximumDelay = maximumDelay
            self.dropEvery = dropEvery
            self.seed = seed
        }
    }

    /// Counts so far.
    public struct Counts: Sendable, Equatable {
        public var relayed = 0
        public var dropped = 0
        /// Passed on before one that had arrived earlier.
        public var reordered = 0
    }

    /// Where senders send.
    public let port: UInt16
    private let inbound: Int32
    private let outbound: Int32
    private let wake: [Int32]
    private let network: Network
    private let counts = Mutex(Counts())
    private let ended = DispatchSemaphore(value: 0)
    private let stopped = Atomic<Bool>(false)

    /// Relays to `host:targetPort` from a socket of its own on `host` (a receiver that takes
    /// datagrams only from its controller's host sees them come from there).
    public init(to targetPort: UInt16, host: String = "127.0.0.1", network: Network) throws {
        self.network = network
        (inbound, port) = try UDPSocket.bind(host: host)
        do {
            outbound = try UDPSocket.connect(host: host, port: targetPort)
        } catch {
            close(inbound)
            throw error
        }
        var ends: [Int32] = [-1, -1]
        guard clh_pipe_cloexec(&ends) == 0 else {
            close(inbound)
            close(outbound)
            throw PrivateDaemonError("cannot make the relay's wake-up pipe: errno \(errno)")
        }
        wake = ends
        Thread.detachNewThread { [self] in relay() }
    }

    public var relayed: Counts { counts.withLock { $0 } }

    /// Passes on what is still held, ends the thread and closes the sockets; once.
    public func stop() {
        guard !stopped.exchange(true, ordering: .relaxed) else { return }
        _ = write(wake[1], "x", 1)
        ended.wait()
        [inbound, outbound, wake[0], wake[1]].forEach { _ = close($0) }
    }

    private func relay() {
        defer { ended.signal() }
        var random = network.seed
        func nextRandom() -> UInt64 {  // SplitMix64
            random &+= 0x9E37_79B9_7F4A_7C15
            var z = random
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE5_E9B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        let maximum = Double(network.maximumDelay.components.seconds) + Double(network.maximumDelay.components.attoseconds) * 1e-18
        // Held datagrams: when each is due, and the order it arrived in.
        var held: [(due: ContinuousClock.Instant, arrival: Int, bytes: [UInt8])] = []
        var arrivals = 0, lastSentArrival = -1
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let now = ContinuousClock.now
            held.sort { $0.due < $1.due }
            while let first = held.first, first.due <= now {
                held.removeFirst()
                first.bytes.withUnsafeBytes { _ = UDPSocket.send(outbound, $0) }
                counts.withLock { counts in
                    counts.relayed += 1
                    if first.arrival < lastSentArrival { counts.reordered += 1 }
                }
                lastSentArrival = max(lastSentArrival, first.arrival)
            }
            let timeout = held.first.map { due in max(0, Int32(((due.due - now) / .milliseconds(1)).rounded(.up))) } ?? -1
            var fds = [pollfd(fd: inbound, events: Int16(POLLIN), revents: 0), pollfd(fd: wake[0], events: Int16(POLLIN), revents: 0)]
            guard poll(&fds, 2, timeout) >= 0 || errno == EINTR else { return }
            if fds[1].revents != 0 {
                for datagram in held { datagram.bytes.withUnsafeBytes { _ = UDPSocket.send(outbound, $0) } }
                return
            }
            guard fds[0].revents != 0 else { continue }
            while true {
                let size = buffer.withUnsafeMutableBytes { recv(inbound, $0.baseAddress, $0.count, 0) }
                guard size > 0 else { break }
                arrivals += 1
                if network.dropEvery > 0, nextRandom() % UInt64(network.dropEvery) == 0 {
                    counts.withLock { $0.dropped += 1 }
                    continue
                }
                let delay = Double(nextRandom() % 1_000_000) / 1_000_000 * maximum
                held.append((ContinuousClock.now + .nanoseconds(Int64(delay * 1e9)), arrivals, Array(buffer[0..<size])))
            }
        }
    }
}
