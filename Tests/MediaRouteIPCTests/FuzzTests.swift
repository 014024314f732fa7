import Glibc
@testable import MediaRouteIPC
import Testing

/// A short, bounded, seeded pass of what `IPC/Fuzz/run-fuzzer.sh` does at length with libFuzzer:
/// mutated golden frames through the decoders, and random bytes at a live connection.
@Suite("Randomized decoding (seeded)", .timeLimit(.minutes(2)))
struct FuzzTests {
    /// SplitMix64: a fixed seed gives the same inputs on every run, so a failure is reproducible.
    struct SeededGenerator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    static func mutate(_ input: [UInt8], using rng: inout SeededGenerator) -> [UInt8] {
        var bytes = input
        for _ in 0..<Int.random(in: 1...8, using: &rng) {
            guard !bytes.isEmpty else { break }
            let at = Int.random(in: 0..<bytes.count, using: &rng)
            switch Int.random(in: 0..<6, using: &rng) {
            case 0: bytes[at] = UInt8.random(in: 0...255, using: &rng)
            case 1: bytes[at] ^= 1 << UInt8.random(in: 0..<8, using: &rng)
            case 2: bytes.remove(at: at)
            case 3: bytes.insert(Array(#"{}[]",:\0"#.utf8).randomElement(using: &rng)!, at: at)
            case 4: bytes.removeSubrange(at..<min(bytes.count, at + Int.random(in: 1...16, using: &rng)))
            default: bytes.insert(contentsOf: bytes[at..<min(bytes.count, at + 8)], at: at)
            }
        }
        return bytes
    }

    /// Mutates a body and, most of the time, gives it a correct header, so the JSON and JSON-RPC
    /// layers are reached and not only the framing.
    static func mutatedFrame(from seeds: [[UInt8]], using rng: inout SeededGenerator) -> [UInt8] {
        let seed = seeds.randomElement(using: &rng)!
        if Int.random(in: 0..<5, using: &rng) == 0 { return mutate(seed, using: &rng) }
        let body = Array(seed.dropFirst(4))
        let mutated = Int.random(in: 0..<4, using: &rng) == 0 ? body : mutate(body, using: &rng)
        return mutated.isEmpty ? [0, 0, 0, 0] : FrameEncoder.frame(mutated)
    }

    @Test func mutatedGoldenFramesNeverBreakTheDecoders() async throws {
        let seeds = GoldenVector.load("valid-frames.txt").map(\.bytes) + GoldenVector.load("invalid-frames.txt").map(\.bytes)
        var rng = SeededGenerator(state: 0x4D52_4950_4321)
        var accepted = 0, refused = 0
        for i in 0..<10_000 {
            if i % 250 == 0 { await Task.yield() }  // two cores: leave room for the other suites
            let input = Self.mutatedFrame(from: seeds, using: &rng)
            var decoder = FrameDecoder(maximumFrameLength: 1 << 16)
            decoder.append(input)
            while true {
                guard let frame = try? decoder.nextFrame() else { break }
                if let message = try? Message.decode(frame) {
                    accepted += 1
                    #expect(try Message.decode(message.encode()) == message)
                } else {
                    refused += 1
                }
            }
        }
        // Both paths were exercised, not just one.
        #expect(accepted > 1000 && refused > 1000, "accepted \(accepted), refused \(refused)")
    }

    /// Random garbage after a good handshake: the connection answers or closes, the process lives,
    /// and a fresh connection still works.
    @Test func randomBytesAtALiveConnection() async throws {
        var rng = SeededGenerator(state: 7)
        let seeds = GoldenVector.load("valid-frames.txt").map(\.bytes)
        for round in 0..<40 {
            let (connection, peer) = try await acceptorWithRawPeer()
            var stream: [UInt8] = []
            for _ in 0..<20 { stream += Self.mutatedFrame(from: seeds, using: &rng) }
            try peer.write(stream)
            shutdown(peer.fd, Int32(SHUT_WR))
            let reason = await connection.waitUntilClosed()
            #expect([.connectionClosed, .frameError, .messageTooLarge, .descriptorMismatch].contains(reason.code), "round \(round): \(reason)")
        }
        let (server, client) = try await connectedPair()
        #expect(try await client.request("echo", ["after": "fuzz"]).result == ["after": "fuzz"])
        await server.close()
        await client.close()
    }
}
