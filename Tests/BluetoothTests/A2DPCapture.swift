import DBus
import Foundation
import Glibc
import MediaCodecs
import MediaRouteIPC
import A2DP
import TestSupport

/// The device's end of an A2DP transport: reads the media packets the driver wrote (one per
/// SOCK_SEQPACKET record), checks their RTP sequence, and decodes their SBC frames with libsbc.
final class A2DPCapture: @unchecked Sendable {  // used by one test task at a time
    private let fd: Int32
    private let decoder: SBCDecoder
    private var lastSequence: UInt16?
    private(set) var rtpSequenceGaps = 0
    private(set) var packets = 0
    private var closed = false

    /// Waits until the driver acquired the transport of `address`, then takes the other end.
    init(_ bed: BluetoothTestBed, address: String) async throws {
        let transport = try await bed.transportPath(address)
        try await bed.harness.waitUntil("the driver acquired the transport") {
            (try? await bed.bus.property("State", of: "org.bluez.MediaTransport1", at: transport, on: "org.bluez").string) == "active"
        }
        let reply = try await bed.mock("TransportPeer", .string(address))
        guard let fd = reply.first?.fileDescriptor?.take() else { throw TestTimeout(what: "TransportPeer gave no descriptor") }
        self.fd = fd
        decoder = try SBCDecoder()
    }

    func close() {
        guard !closed else { return }
        closed = true
        Glibc.close(fd)
    }

    deinit { close() }

    struct Decoded {
        var samples: [Int16] = []
        var sampleRate = 0
        var channels = 0
        var seconds: Double { sampleRate == 0 ? 0 : Double(samples.count / max(channels, 1)) / Double(sampleRate) }
    }

    /// Reads packets until `seconds` of audio decoded; fails if they do not come within
    /// `seconds` × 3 + 5 s (the driver paces in real time).
    func read(seconds: Double) async throws -> Decoded {
        try await onThreadOfItsOwn { [self] in try readBlocking(seconds: seconds) }
    }

    private func readBlocking(seconds: Double) throws -> Decoded {
        var decoded = Decoded()
        let deadline = ContinuousClock.now + .milliseconds(Int((seconds * 3 + 5) * 1000))
        var packet = [UInt8](repeating: 0, count: 4096)
        while decoded.seconds < seconds {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { throw TestTimeout(what: "\(seconds) s of A2DP audio (got \(decoded.seconds) s in \(packets) packets)") }
            var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, Int32(left.components.seconds * 1000 + 1)) > 0 else { continue }
            let count = recv(fd, &packet, packet.count, 0)
            guard count > 0 else { throw TestTimeout(what: "the transport closed after \(packets) packets") }
            try take(Array(packet[0..<count]), into: &decoded)
        }
        return decoded
    }

    /// One A2DP media packet: RTP, the SBC payload header, whole SBC frames.
    private func take(_ packet: [UInt8], into decoded: inout Decoded) throws {
        let media = try A2DPMediaPacket(bytes: packet)
        packets += 1
        if let lastSequence, media.sequence != lastSequence &+ 1 { rtpSequenceGaps += 1 }
        lastSequence = media.sequence
        let pcm = try media.frames.withUnsafeBytes { try decoder.decode($0) }
        decoded.samples += pcm
        decoded.sampleRate = decoder.sampleRate ?? 0
        decoded.channels = decoder.channels ?? 0
    }
}
