/// The SDP an ANNOUNCE carries: one ALAC stream of 352-frame packets at 44.1 kHz, 16-bit stereo,
/// with the wrapped AES key and IV when the stream is encrypted.
public struct SDPAnnouncement: Sendable {
    public var sessionID: String
    public var localAddress: String
    public var remoteAddress: String
    public var encryption: RAOPEncryption?

    public init(sessionID: String, localAddress: String, remoteAddress: String, encryption: RAOPEncryption?) {
        self.sessionID = sessionID
        self.localAddress = localAddress
        self.remoteAddress = remoteAddress
        self.encryption = encryption
    }

    /// The ALAC "magic cookie" fields receivers expect: frame length 352, version 0, 16 bits,
    /// rice history 40, initial 10, limit 14, 2 channels, max run 255, no max frame or bit rate, 44100 Hz.
    public static let alacFormat = "96 \(ALACFrame.framesPerPacket) 0 16 40 10 14 2 255 0 0 \(ALACFrame.sampleRate)"

    public var text: String {
        var lines = [
            "v=0",
            "o=iTunes \(sessionID) 0 IN IP4 \(localAddress)",
            "s=iTunes",
            "c=IN IP4 \(remoteAddress)",
            "t=0 0",
            "m=audio 0 RTP/AVP 96",
            "a=rtpmap:96 AppleLossless",
            "a=fmtp:\(Self.alacFormat)",
        ]
        if let encryption {
            lines.append("a=rsaaeskey:\(encryption.wrappedKeyBase64)")
            lines.append("a=aesiv:\(encryption.ivBase64)")
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }
}
