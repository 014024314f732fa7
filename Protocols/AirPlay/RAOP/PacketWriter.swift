import Glibc

/// The sending thread's packet maker: RTP header, ALAC frame and encryption written into one
/// buffer made once, the packet kept for resends and sent on the audio socket; and the sync
/// packets on the control socket. Counts the sequence number and RTP timestamp of the stream.
struct PacketWriter {
    private let packet: UnsafeMutableRawBufferPointer
    private let sockets: RAOPStreamer.Sockets
    private let cipher: AESCBCEncryptor?
    private let history: PacketHistory
    private let ssrc: UInt32
    private(set) var sequence: UInt16
    private(set) var timestamp: UInt32
    private(set) var packetsSinceSync = 0

    init(packet: UnsafeMutableRawBufferPointer, sockets: RAOPStreamer.Sockets, start: RAOPStreamer.Start, cipher: AESCBCEncryptor?, history: PacketHistory) {
        self.packet = packet
        self.sockets = sockets
        self.cipher = cipher
        self.history = history
        sequence = start.sequence
        timestamp = start.timestamp
        ssrc = start.ssrc
    }

    /// One audio packet of 352 stereo frames out, at the next sequence number and timestamp. A
    /// receiver whose port refuses (its software stopped) is a failure, as is a socket that is no
    /// longer ours; anything else (a full buffer, a route gone for a moment while Wi-Fi roams) is
    /// UDP's loss, which the receiver's resend request makes good from the history. The sequence
    /// number moves on either way: the packet is in the history.
    mutating func emit(_ samples: UnsafeMutableBufferPointer<Int16>, marker: Bool) -> RAOPError? {
        RTPAudioPacket.writeHeader(marker: marker, sequence: sequence, timestamp: timestamp, ssrc: ssrc, into: packet)
        ALACFrame.encode(samples.baseAddress!, into: packet.baseAddress! + RTPAudioPacket.headerBytes)
        do throws(RAOPError) { try cipher?.encryptWholeBlocks(UnsafeMutableRawBufferPointer(rebasing: packet[RTPAudioPacket.headerBytes...])) } catch { return error }
        history.record(sequence: sequence, bytes: UnsafeRawBufferPointer(packet))
        var failure: RAOPError?
        if send(sockets.audio, packet.baseAddress, packet.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) < 0 {
            switch errno {
            case ECONNREFUSED:
                failure = RAOPError(.connectionClosed, "the receiver no longer takes audio: its audio port refused a packet (\(String(cString: strerror(errno))))")
            case EBADF, ENOTSOCK:
                failure = RAOPError(.notRecording, "the stream's audio socket is closed")
            default:
                break
            }
        }
        sequence &+= 1
        timestamp &+= UInt32(ALACFrame.framesPerPacket)
        packetsSinceSync += 1
        return failure
    }

    /// Ties `nextTimestamp` to now: the receiver plays it `latencyFrames` later.
    mutating func sync(first: Bool, nextTimestamp: UInt32, latencyFrames: UInt32) {
        let sync = RAOPControlPacket.sync(first: first, playingTimestamp: nextTimestamp &- latencyFrames, time: .now(), nextTimestamp: nextTimestamp).bytes
        sockets.controlAddress.send(sync, from: sockets.control)
        packetsSinceSync = 0
    }
}
