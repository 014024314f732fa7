import A2DP
import CBenchBaseline
import Foundation
import MediaCodecs
import MediaRouteIPC
import PCMPlayback

/// `sbc-encode`: the A2DP driver's path without its pacing (20 ms int16 records, as `mediaroute
/// stream` writes them, through a sample ring, read by `RingPCMSource` a packet's worth at a time, encoded by `SBCEncoder`, framed by
/// `A2DPPacketizer` into a packet buffer) against libsbc called in a plain C loop over the same
/// PCM at identical settings: 48 kHz joint stereo, 16 blocks, 8 subbands, loudness, bitpool 53,
/// 7 frames per 895-byte packet. Neither side writes a socket: that system call would be the same
/// for both and only hide the difference measured here. 10 ms records are measured too, for reference.
struct SBCEncodeBenchmark {
    let seconds: Int
    static let mtu = 895

    func run() async throws {
        let frames = seconds * 48_000
        var pcm = [Int16](repeating: 0, count: frames * 2)
        for i in 0..<frames {
            let t = Double(i) / 48_000
            pcm[2 * i] = Int16(32767 * (0.4 * sin(2 * .pi * 440 * t) + 0.1 * sin(2 * .pi * 3_000 * t)))
            pcm[2 * i + 1] = Int16(32767 * 0.4 * sin(2 * .pi * 660 * t))
        }
        let configuration = SBCConfiguration()
        let framesPerPacket = try A2DPPacketizer(frameBytes: configuration.encoderSettings.frameBytes, samplesPerFrame: 128, writeMTU: Self.mtu).framesPerPacket
        print("sbc-encode: \(seconds) s of 48 kHz stereo int16, \(configuration), \(framesPerPacket) frames per \(Self.mtu)-byte packet, best of fifteen runs each")
        var baseline: [UInt64] = [], ours: [UInt64] = [], oursSmallRecords: [UInt64] = []
        var cBytes = 0, swiftBytes = 0
        for _ in 0..<15 {
            let start = now()
            cBytes = pcm.withUnsafeBufferPointer { cbb_sbc_encode($0.baseAddress, frames, 53, Int32(framesPerPacket)) }
            baseline.append(now() - start)
            guard cBytes > 0 else { throw BenchmarkError("the C libsbc loop failed") }
            let (time, bytes) = try driverPath(pcm, configuration, recordFrames: 960)
            ours.append(time)
            swiftBytes = bytes
            oursSmallRecords.append(try driverPath(pcm, configuration, recordFrames: 480).0)
        }
        // Both encode every whole SBC frame; ours also writes 13 bytes of headers per packet.
        let sbcFrames = frames / 128
        guard cBytes == sbcFrames * configuration.encoderSettings.frameBytes,
              swiftBytes == cBytes + (sbcFrames + framesPerPacket - 1) / framesPerPacket * A2DPPacketizer.headerBytes else {
            throw BenchmarkError("the two paths encoded different amounts: C \(cBytes) bytes, ours \(swiftBytes) bytes with headers")
        }
        let c = Double(baseline.min()!), swift = Double(ours.min()!)
        print("  raw C libsbc loop: \(format(c / 1e6)) ms, \(format(Double(seconds) * 1e9 / c, digits: 0))× real time")
        print("  driver path (ring, RingPCMSource, SBCEncoder, A2DPPacketizer): \(format(swift / 1e6)) ms, \(format(Double(seconds) * 1e9 / swift, digits: 0))× real time")
        let small = Double(oursSmallRecords.min()!)
        print("  the same with 10 ms records: \(format(small / 1e6)) ms, ratio \(format(small / c))")
        printResult("sbc-encode", ratio: swift / c, target: 1.1)
    }

    /// What `A2DPSender` does per packet, minus pacing and the send: returns the time and the bytes of packets made.
    private func driverPath(_ pcm: [Int16], _ configuration: SBCConfiguration, recordFrames: Int) throws -> (UInt64, Int) {
        let ring = try SampleRing.create(format: .audio(sampleRate: 48_000, channels: 2, sampleType: .int16), capacity: 1 << 16)
        let source = try RingPCMSource(ring: ring, format: configuration.pcmFormat)
        let encoder = try SBCEncoder(configuration.encoderSettings)
        var packetizer = try A2DPPacketizer(frameBytes: encoder.frameBytes, samplesPerFrame: 128, writeMTU: Self.mtu)
        let samplesPerPacket = packetizer.samplesPerPacket
        let block = UnsafeMutableBufferPointer<Int16>.allocate(capacity: samplesPerPacket * 2)
        let packet = UnsafeMutableRawBufferPointer.allocate(byteCount: packetizer.maximumPacketBytes, alignment: 8)
        defer {
            block.deallocate()
            packet.deallocate()
        }
        let record = recordFrames * 2
        var filled = 0, made = 0
        func sendPacket(frames: Int) throws {
            let sbcFrames = frames / 128
            let body = UnsafeMutableRawBufferPointer(rebasing: packet[A2DPPacketizer.headerBytes...])
            _ = try encoder.encode(UnsafeRawBufferPointer(start: block.baseAddress, count: sbcFrames * encoder.codesize), into: body)
            made += try packetizer.finishPacket(packet, frames: sbcFrames)
        }
        var available = 0  // frames written into the ring and not yet read
        let start = now()
        try pcm.withUnsafeBufferPointer { samples in
            for offset in stride(from: 0, to: samples.count, by: record) {
                let piece = UnsafeBufferPointer(rebasing: samples[offset..<min(offset + record, samples.count)])
                guard try ring.write(UnsafeRawBufferPointer(piece), timestamp: 0) == .written else { throw BenchmarkError("the ring refused a record") }
                available += piece.count / 2
                // A packet is read when it is due, and by then the app has written it: no read finds the ring empty.
                while available >= samplesPerPacket - filled {
                    guard case .frames(let count) = source.read(into: UnsafeMutableBufferPointer(rebasing: block[(filled * 2)...]), waitingUpTo: .zero) else {
                        throw BenchmarkError("the ring source found nothing where a packet's worth was written")
                    }
                    filled += count
                    available -= count
                    if filled == samplesPerPacket {
                        try sendPacket(frames: filled)
                        filled = 0
                    }
                }
            }
        }
        // The rest, as the C loop encodes every whole frame.
        ring.closeProducer()
        while case .frames(let count) = source.read(into: UnsafeMutableBufferPointer(rebasing: block[(filled * 2)...]), waitingUpTo: .zero) {
            filled += count
            if filled == samplesPerPacket {
                try sendPacket(frames: filled)
                filled = 0
            }
        }
        if filled >= 128 { try sendPacket(frames: filled / 128 * 128) }  // the whole frames left, as the C loop encodes
        return (now() - start, made)
    }
}
