import RTP

/// PCM in, RTP packets of Opus out (RFC 7587): accumulates whatever sizes of sample blocks arrive,
/// encodes each whole frame, and hands each packet to a sender. The audio half of a driver's
/// real-time path.
public final class OpusRTPEncoder {
    public let encoder: OpusEncoder
    public let sampleType: SampleType
    private let frameBytes: Int
    private let ticks: UInt32
    private var pending: [UInt8] = []
    private var packet: [UInt8]
    private var header: RTPHeaderState

    public enum SampleType: Sendable { case float32, int16 }

    public init(_ settings: OpusEncoder.Settings, sampleType: SampleType, payloadType: UInt8) throws(CodecError) {
        encoder = try OpusEncoder(settings)
        self.sampleType = sampleType
        frameBytes = encoder.settings.frameSize * settings.channels * (sampleType == .float32 ? 4 : 2)
        ticks = UInt32(encoder.settings.frameMicroseconds * 48 / 1000)  // RFC 7587: a 48 kHz clock, whatever the rate
        packet = [UInt8](repeating: 0, count: RTPPacket.headerSize + OpusEncoder.maximumPacketSize)
        header = RTPHeaderState(payloadType: payloadType)
        pending.reserveCapacity(frameBytes * 4)
    }

    /// Takes interleaved samples (any number of whole sample frames) and sends a packet for each
    /// complete Opus frame; returns the bytes handed to `send`.
    @discardableResult
    public func add(_ samples: UnsafeRawBufferPointer, send: (UnsafeRawBufferPointer) -> Void) throws(CodecError) -> Int {
        pending.append(contentsOf: samples)
        var offset = 0, sent = 0
        defer { pending.removeFirst(offset) }
        while pending.count - offset >= frameBytes {
            let size: Int
            // Consumed even when it fails to encode: a bad frame is dropped, never sent twice.
            defer { offset += frameBytes }
            do {
                size = try pending.withUnsafeBytes { source in
                    try packet.withUnsafeMutableBytes { out in
                        let body = UnsafeMutableRawBufferPointer(rebasing: out[RTPPacket.headerSize...])
                        let start = source.baseAddress! + offset
                        return sampleType == .float32
                            ? try encoder.encode(start.assumingMemoryBound(to: Float.self), into: body)
                            : try encoder.encode(start.assumingMemoryBound(to: Int16.self), into: body)
                    }
                }
            } catch let error as CodecError {
                throw error
            } catch {
                throw CodecError("\(error)")
            }
            packet.withUnsafeMutableBytes { out in
                header.write(into: out, marker: false)
                send(UnsafeRawBufferPointer(rebasing: out[0..<(RTPPacket.headerSize + size)]))
            }
            header.advance(by: ticks)
            sent += RTPPacket.headerSize + size
        }
        return sent
    }
}

/// I420 frames in, RTP packets of H.264 out (RFC 6184): each frame encoded by x264, its NAL units
/// packetized (FU-A for large ones), the marker bit on the frame's last packet. The video half of a
/// driver's real-time path.
public final class H264RTPEncoder {
    public let encoder: H264Encoder
    private let packetizer = H264Packetizer()
    private var payloads: [[UInt8]] = []
    private var packet: [UInt8]
    private var header: RTPHeaderState
    private var frame: Int64 = 0

    public init(_ settings: H264Encoder.Settings, payloadType: UInt8) throws(CodecError) {
        encoder = try H264Encoder(settings)
        packet = [UInt8](repeating: 0, count: RTPPacket.headerSize + packetizer.maximumPayload)
        header = RTPHeaderState(payloadType: payloadType)
    }

    /// Encodes one frame and sends its packets; returns the bytes handed to `send`.
    @discardableResult
    public func add(_ frame: UnsafeRawBufferPointer, send: (UnsafeRawBufferPointer) -> Void) throws -> Int {
        payloads.removeAll(keepingCapacity: true)
        try encoder.encode(frame, pts: self.frame) { nal in packetizer.payloads(for: nal.payload) { payloads.append(Array($0)) } }
        var sent = 0
        for (index, payload) in payloads.enumerated() {
            packet.withUnsafeMutableBytes { out in
                out.baseAddress!.advanced(by: RTPPacket.headerSize).copyMemory(from: payload, byteCount: payload.count)
                header.write(into: out, marker: index == payloads.count - 1)
                send(UnsafeRawBufferPointer(rebasing: out[0..<(RTPPacket.headerSize + payload.count)]))
            }
            header.advance(by: 0)
            sent += RTPPacket.headerSize + payload.count
        }
        self.frame += 1
        header.advance(by: UInt32(90_000 / max(encoder.settings.frameRate, 1)), nextPacket: false)
        return sent
    }
}

/// The moving parts of an RTP sender's headers: a random start for sequence and timestamp, and an SSRC.
struct RTPHeaderState {
    let payloadType: UInt8
    var sequence = UInt16.random(in: .min ... .max)
    var timestamp = UInt32.random(in: .min ... .max)
    let ssrc = UInt32.random(in: .min ... .max)

    init(payloadType: UInt8) { self.payloadType = payloadType }

    func write(into buffer: UnsafeMutableRawBufferPointer, marker: Bool) {
        RTPPacket.writeHeader(into: buffer, marker: marker, payloadType: payloadType, sequence: sequence, timestamp: timestamp, ssrc: ssrc)
    }

    /// After a packet: the next sequence number, and `ticks` more on the media clock.
    mutating func advance(by ticks: UInt32, nextPacket: Bool = true) {
        if nextPacket { sequence &+= 1 }
        timestamp &+= ticks
    }
}
