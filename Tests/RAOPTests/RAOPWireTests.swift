import COpenSSL
import Testing
@testable import RAOP

/// The RAOP wire pieces on their own: byte layouts, parsing, the Digest answer and the encryption.
@Suite struct RAOPWireTests {
    @Test func alacFrameOfAFullPacketIs1412BytesWithTheEscapeHeaderAndEndTag() {
        let samples = (0..<704).map { Int16(truncatingIfNeeded: $0 &* 97) }
        let frame = ALACFrame.uncompressed(samples)
        #expect(frame.count == 1412)
        #expect(ALACFrame.uncompressedSize == 1412)
        // 001 0000 000000000000 0 00 1: the first 23 bits, then the first sample's 16 bits.
        #expect(frame[0] == 0x20 && frame[1] == 0x00)
        #expect(frame[2] & 0xfe == 0x02)
        let bits = frame.flatMap { byte in (0..<8).map { (byte >> (7 - $0)) & 1 } }
        func value(at bit: Int, width: Int) -> Int { bits[bit..<(bit + width)].reduce(0) { $0 << 1 | Int($1) } }
        for index in [0, 1, 2, 351, 703] {
            #expect(Int16(truncatingIfNeeded: value(at: 23 + 16 * index, width: 16)) == samples[index])
        }
        #expect(value(at: 23 + 16 * 704, width: 3) == 7)
    }

    @Test func aShortPacketIsPaddedWithSilence() {
        let frame = ALACFrame.uncompressed([Int16](repeating: -1, count: 10))
        #expect(frame.count == 1412)
        #expect(frame[1400] == 0)
    }

    @Test func rtpAudioPacketHeader() {
        let packet = RTPAudioPacket(marker: true, sequence: 0x1234, timestamp: 0xdeadbeef, ssrc: 0x01020304, payload: [9]).bytes
        #expect(packet == [0x80, 0xe0, 0x12, 0x34, 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 9])
        #expect(RTPAudioPacket(marker: false, sequence: 1, timestamp: 0, ssrc: 0, payload: []).bytes[1] == 0x60)
    }

    @Test func syncResendAndTimingPackets() throws {
        let time = NTPTimestamp(seconds: 0x11223344, fraction: 0x55667788)
        let sync = RAOPControlPacket.sync(first: true, playingTimestamp: 100, time: time, nextTimestamp: 77275).bytes
        #expect(sync.count == 20 && sync[0] == 0x90 && sync[1] == 0xd4)
        #expect(sync.bigEndian(UInt32.self, at: 16) == 77275)
        #expect(RAOPControlPacket.sync(first: false, playingTimestamp: 0, time: time, nextTimestamp: 0).bytes[0] == 0x80)
        #expect(RAOPControlPacket.parseResendRequest([0x80, 0xd5, 0, 1, 0x12, 0x34, 0, 3]) == .resendRequest(firstSequence: 0x1234, count: 3))
        #expect(RAOPControlPacket.parseResendRequest([0x80, 0xd5, 0]) == nil)
        var request: [UInt8] = [0x80, 0xd2, 0, 7] + [UInt8](repeating: 0, count: 20)
        request += [1, 2, 3, 4, 5, 6, 7, 8]
        let reply = try #require(RAOPTimingPacket.reply(to: request, received: time, now: time))
        #expect(reply.count == 32 && reply[1] == 0xd3)
        #expect(Array(reply[8..<16]) == [1, 2, 3, 4, 5, 6, 7, 8])
        #expect(Array(reply[16..<24]) == time.bytes)
        #expect(RAOPTimingPacket.reply(to: [0x80, 0xd4] + [UInt8](repeating: 0, count: 30), received: time) == nil)
    }

    @Test func progressAndDMAPMetadataBodies() {
        #expect(RAOPMetadata.progressText(current: 100, positionFrames: 44100, durationFrames: 441000) == "progress: \(UInt32.max - 44100 + 101)/100/397000\r\n")
        let item = RAOPMetadata.listingItem(title: "Tï", artist: nil, album: "A")
        #expect(item == Array("mlit".utf8) + [0, 0, 0, 20] + Array("minm".utf8) + [0, 0, 0, 3, 0x54, 0xc3, 0xaf] + Array("asal".utf8) + [0, 0, 0, 1, 0x41])
    }

    @Test func historyAnswersRecentPacketsAndForgetsOldOnes() {
        let history = PacketHistory(capacity: 4)
        for sequence in UInt16(65533)...UInt16(65535) { history.record(sequence: sequence, bytes: [UInt8(sequence & 0xff)]) }
        history.record(sequence: 0, bytes: [0])
        history.record(sequence: 1, bytes: [1])
        #expect(history.packet(1) == [1])
        #expect(history.packet(0) == [0])
        #expect(history.packet(65533) == nil)
    }

    @Test func digestAnswerMatchesRFC2617() throws {
        let digest = try #require(DigestAuthentication(challenge: "Digest realm=\"raop\", nonce=\"abcdef0123\""))
        #expect(digest.realm == "raop" && digest.nonce == "abcdef0123")
        let header = try digest.authorization(method: "ANNOUNCE", uri: "rtsp://10.0.0.2/1234", password: "secret")
        #expect(header.contains("response=\"e9e8a18ec5011f291e5040cbd130c9d9\""))
        #expect(header.hasPrefix("Digest username=\"iTunes\", realm=\"raop\", nonce=\"abcdef0123\", uri=\"rtsp://10.0.0.2/1234\""))
        #expect(DigestAuthentication(challenge: "Basic realm=\"x\"") == nil)
        #expect(DigestAuthentication(challenge: "Digest realm=\"raop\"") == nil)
    }

    @Test func encryptionLeavesThePartialBlockClearAndWrapsTheKeyForTheAirPortKey() throws {
        let key = [UInt8](repeating: 7, count: 16), iv = (0..<16).map { UInt8($0) }
        let encryption = try RAOPEncryption(key: key, iv: iv)
        let payload = (0..<1412).map { UInt8(truncatingIfNeeded: $0) }
        let encrypted = try encryption.encrypt(payload)
        #expect(encrypted.count == 1412)
        #expect(Array(encrypted[1408...]) == Array(payload[1408...]))
        #expect(Array(encrypted[..<16]) != Array(payload[..<16]))
        // Decrypted by OpenSSL's other direction, as a receiver does.
        let context = try #require(EVP_CIPHER_CTX_new())
        defer { EVP_CIPHER_CTX_free(context) }
        var decrypted = [UInt8](repeating: 0, count: 1408 + 16), written: Int32 = 0
        #expect(EVP_DecryptInit_ex(context, EVP_aes_128_cbc(), nil, key, iv) == 1 && EVP_CIPHER_CTX_set_padding(context, 0) == 1)
        #expect(EVP_DecryptUpdate(context, &decrypted, &written, Array(encrypted[..<1408]), 1408) == 1)
        #expect(written == 1408 && Array(decrypted[..<1408]) == Array(payload[..<1408]))
        // A 2048-bit RSA block, base64 without padding: 342 characters.
        #expect(encryption.wrappedKeyBase64.count == 342)
        #expect(encryption.ivBase64 == "AAECAwQFBgcICQoLDA0ODw")
        #expect(AirPortExpressKey.modulus.count == 256)
    }

    @Test func transportPortsAreParsedAndCheckedAndRequestsCannotBeSplit() throws {
        let transport = try RTSPTransport(header: "RTP/AVP/UDP;unicast;mode=record;server_port=6001;control_port=6002;timing_port=6003")
        #expect(transport == RTSPTransport(serverPort: 6001, controlPort: 6002, timingPort: 6003))
        #expect(throws: RAOPError.self) { try RTSPTransport(header: "RTP/AVP/UDP;server_port=99999;control_port=1") }
        #expect(throws: RAOPError.self) { try RTSPTransport(header: "RTP/AVP/UDP;unicast") }
        let injected = RTSPRequest(method: "OPTIONS", uri: "*", headers: [("X", "a\r\nEvil: 1")])
        #expect(throws: RAOPError.self) { try injected.encoded(cseq: 1) }
    }

    @Test func responsesAreParsedIncrementallyAndBounded() throws {
        let text = Array("RTSP/1.0 200 OK\r\nCSeq: 3\r\nContent-Length: 4\r\nAudio-Latency: 11025\r\n\r\nbody".utf8)
        #expect(try RTSPResponse.parse(text.dropLast()) == nil)
        let (response, length) = try #require(try RTSPResponse.parse(text))
        #expect(length == text.count && response.status == 200 && response.cseq == 3 && response.body == Array("body".utf8))
        #expect(response.header("audio-latency") == "11025")
        #expect(throws: RAOPError.self) { try RTSPResponse.parse(Array("HTTP/1.1 200 OK\r\n\r\n".utf8)) }
        #expect(throws: RAOPError.self) { try RTSPResponse.parse(Array("RTSP/1.0 200 OK\r\nno colon here\r\n\r\n".utf8)) }
        #expect(throws: RAOPError.self) { try RTSPResponse.parse(Array("RTSP/1.0 200 OK\r\nContent-Length: -1\r\n\r\n".utf8)) }
    }
}
