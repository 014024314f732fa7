/// Splits H.264 NAL units into RTP payloads (RFC 6184, packetization mode 1): a NAL that fits is
/// sent whole (single NAL unit packet), a larger one in fragmentation units (FU-A).
public struct H264Packetizer: Sendable {
    /// The largest RTP payload; 1,200 bytes keeps packets under any path MTU. At least 3 is used:
    /// a fragment carries two bytes of header.
    public var maximumPayload = 1200

    public init() {}

    /// The payloads for one NAL unit (without its start code).
    public func payloads(for nal: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) throws -> Void) rethrows {
        guard !nal.isEmpty else { return }
        let maximumPayload = max(self.maximumPayload, 3)
        if nal.count <= maximumPayload {
            try body(nal)
            return
        }
        let header = nal[0]
        let indicator = (header & 0xe0) | 28  // F and NRI of the NAL, type FU-A
        var offset = 1
        var fragment = [UInt8](repeating: 0, count: maximumPayload)
        while offset < nal.count {
            let size = min(maximumPayload - 2, nal.count - offset)
            let start: UInt8 = offset == 1 ? 0x80 : 0
            let end: UInt8 = offset + size == nal.count ? 0x40 : 0
            fragment[0] = indicator
            fragment[1] = start | end | (header & 0x1f)
            fragment.withUnsafeMutableBytes { $0.baseAddress!.advanced(by: 2).copyMemory(from: nal.baseAddress!.advanced(by: offset), byteCount: size) }
            try fragment.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[0..<(size + 2)])) }
            offset += size
        }
    }
}

/// Puts H.264 back together from RTP payloads in sequence order, as an Annex-B stream. A gap in
/// the sequence drops the frame being assembled and says so, so the receiver can ask the sender
/// for a keyframe; until one arrives, frames that would not decode are not written.
public struct H264Depacketizer: Sendable {
    /// A NAL unit larger than this (a sender that never ends a fragment) is dropped as lost.
    public static let maximumNALSize = 4 << 20

    private var expected: UInt16?
    private var fragment: [UInt8] = []
    private var inFragment = false
    private var waitingForKeyframe = false
    /// Packets that never arrived.
    public private(set) var lost = 0

    public init() {}

    public struct Output {
        /// Annex-B bytes (start code, NAL) ready to append to a `.h264` file.
        public var annexB: [UInt8] = []
        /// Data was lost: ask the sender for a keyframe.
        public var needsKeyframe = false
    }

    public mutating func add(_ packet: RTPPacket) -> Output {
        var output = Output()
        if let expected, packet.sequence != expected {
            let gap = packet.sequence.distance(after: expected)
            if gap < 0 { return output }  // late or duplicate: already given up on
            lost += gap
            dropFrame(&output)
        }
        expected = packet.sequence &+ 1
        let payload = packet.payload
        guard let first = payload.first else { return output }
        let type = first & 0x1f
        switch type {
        case 1...23:
            emit(payload, into: &output)
        case 24:  // STAP-A: several NALs, each with a 16-bit length
            var offset = 1
            while offset + 2 <= payload.count {
                let size = Int(payload[offset]) << 8 | Int(payload[offset + 1])
                offset += 2
                guard size > 0, offset + size <= payload.count else { break }
                emit(Array(payload[offset..<(offset + size)]), into: &output)
                offset += size
            }
        case 28 where payload.count >= 2:  // FU-A
            let header = payload[1]
            if header & 0x80 != 0 {
                fragment = [(first & 0xe0) | (header & 0x1f)]
                inFragment = true
            }
            guard inFragment else { return output }
            guard fragment.count + payload.count - 2 <= Self.maximumNALSize else {
                lost += 1
                dropFrame(&output)
                return output
            }
            fragment += payload[2...]
            if header & 0x40 != 0 {
                emit(fragment, into: &output)
                inFragment = false
            }
        default:
            break
        }
        return output
    }

    /// Data was lost: what was being assembled cannot decode, and neither can anything until a keyframe.
    private mutating func dropFrame(_ output: inout Output) {
        inFragment = false
        fragment.removeAll(keepingCapacity: true)
        waitingForKeyframe = true
        output.needsKeyframe = true
    }

    private mutating func emit(_ nal: [UInt8], into output: inout Output) {
        guard let first = nal.first else { return }
        let type = first & 0x1f
        // After a loss, only a keyframe (its parameter sets, then its IDR slice) can be decoded.
        if waitingForKeyframe {
            guard type == 5 || type == 7 || type == 8 else { return }
            if type == 5 { waitingForKeyframe = false }
        }
        output.annexB += [0, 0, 0, 1]
        output.annexB += nal
    }
}
