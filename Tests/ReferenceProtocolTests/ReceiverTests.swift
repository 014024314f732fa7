import Foundation
import MediaCodecs
@testable import MediaRouteIPC
import PrivateDaemons
import ReferenceProtocol
import Testing
import TestSupport

/// The receiver on its own, spoken to directly over TCP: what a controller written from
/// PROTOCOL.md would see, including the mistakes and the malice.
@Suite("Reference receiver: the protocol and bad input", .serialized, .timeLimit(.minutes(2)))
struct ReceiverTests {
    /// A private Avahi, a receiver on it, and media to play, for `body`; all stopped afterwards, whatever happens.
    private func withReceiver(_ arguments: [String] = [], _ body: (ReceiverProcess, MediaFileServer) async throws -> Void) async throws {
        let root = NSTemporaryDirectory() + "mediaroute-receiver-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: root + "/media", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let avahi = try await PrivateAvahi()
        var media: MediaFileServer?, receiver: ReceiverProcess?
        try await withTearDown {
            try await MediaFileServer.makeTone(at: root + "/media/tone.wav", seconds: 30, title: "Long Tone")
            media = try await MediaFileServer(directory: root + "/media")
            receiver = try ReceiverProcess(name: "Bench TV", avahi: avahi, root: root, arguments: arguments)
            try await receiver!.waitUntilAnnounced()
            try await body(receiver!, media!)
        } tearDown: {
            await receiver?.stop()
            await media?.stop()
            await avahi.stop()
        }
    }

    /// A controller connection, as a driver written from the spec would open it.
    private func controller(_ receiver: ReceiverProcess, id: String = "test-controller", name: String = "test",
                            events: RPCHandlers = RPCHandlers()) async throws -> Connection {
        let fd = try await TCPSocket.connect(host: "127.0.0.1", port: try #require(receiver.port), timeout: .seconds(3))
        return try await Connection.open(socket: fd, hello: Hello(role: .controller, name: name, identity: ["controllerId": .string(id)]),
                                         side: .initiator(acceptingRoles: [.receiver]), configuration: ConnectionConfiguration(label: "receiver"),
                                         handlers: events)
    }

    private func code(of error: any Error) -> Int? { (error as? RPCError)?.code.rawValue }

    @Test func aStreamTakesRTPOnlyFromItsControllersHost() async throws {
        try await withReceiver(["--auth", "none"]) { receiver, _ in
            let link = try await controller(receiver)
            let started = try await link.request(ReferenceRequest.StreamStart.method,
                                                 ["stream": "s", "kind": "audio", "codec": "opus", "sampleRate": 48_000, "channels": 2]).result
            let port = UInt16(try #require(started.objectValue?["port"]?.integerValue))
            // One real Opus packet, sent from another host (127.0.0.2, still this machine's loopback) and from the controller's.
            let encoder = try OpusRTPEncoder(OpusEncoder.Settings(), sampleType: .float32, payloadType: ReferenceProtocol.opusPayloadType)
            var packets: [[UInt8]] = []
            try [Float](repeating: 0.25, count: 960 * 2).withUnsafeBytes { _ = try encoder.add($0) { packets.append(Array($0)) } }
            let packet = try #require(packets.first)
            for source in ["127.0.0.2", "127.0.0.1"] {
                let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
                defer { close(fd) }
                var from = try sockaddr_in(numericHost: source, port: 0, for: "bind")
                var to = try sockaddr_in(numericHost: "127.0.0.1", port: port, for: "send")
                let bound = withUnsafePointer(to: &from) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
                #expect(bound == 0)
                let sent = packet.withUnsafeBytes { bytes in
                    withUnsafePointer(to: &to) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, bytes.baseAddress, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
                }
                #expect(sent == packet.count)
            }
            try await Task.sleep(for: .milliseconds(300))  // both datagrams are in; only one may count
            let summary = try await link.request(ReferenceRequest.StreamStop.method, ["stream": "s"]).result
            #expect(summary.objectValue?["packets"] == 1 && summary.objectValue?["frames"] == 1, "\(summary)")
            try await receiver.waitFor("stream s ended: 1 packets, 0 lost, 1 frames, 1 datagrams from other hosts dropped")
            await link.close()
        }
    }

    @Test func garbageAndOversizedFramesCostOnlyTheirConnection() async throws {
        try await withReceiver { receiver, media in
            let port = try #require(receiver.port)
            // Not even a frame: random bytes, then an announced length of 2 GiB.
            for bytes: [UInt8] in [Array("GET / HTTP/1.1\r\n\r\n".utf8), [0x7f, 0xff, 0xff, 0xff, 0x7b]] {
                let fd = try await TCPSocket.connect(host: "127.0.0.1", port: port, timeout: .seconds(3))
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)  // a plain blocking client, bounded by a timeout
                var limit = timeval(tv_sec: 5, tv_usec: 0)
                setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
                _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                var buffer = [UInt8](repeating: 0, count: 4096)
                var total = 0
                while case let n = read(fd, &buffer, buffer.count), n > 0 { total += n }  // the receiver answers, then closes
                // The answer is an error frame with id null, naming the fault.
                let answer = String(decoding: buffer[4..<max(4, min(total, buffer.count))], as: UTF8.self)
                #expect(answer.contains(#""id":null"#) && answer.contains("bad frame"), "\(answer)")
                close(fd)
            }
            try await receiver.waitFor("broke the protocol")
            #expect(receiver.process.exitIfEnded() == nil)
            // A hello without a controller id is refused, naming the member.
            let fd = try await TCPSocket.connect(host: "127.0.0.1", port: port, timeout: .seconds(3))
            let refused = await #expect(throws: RPCError.self) {
                _ = try await Connection.open(socket: fd, hello: Hello(role: .controller, name: "anonymous"), side: .initiator(acceptingRoles: [.receiver]),
                                              configuration: ConnectionConfiguration(label: "receiver"))
            }
            #expect(refused?.message.contains("identity.controllerId") == true, "\(refused?.message ?? "")")
            // And a proper controller is served as if nothing happened.
            let connection = try await controller(receiver)
            #expect(try await connection.request(ReferenceRequest.Status.method).result.objectValue?["volume"] == .double(0.5))
            await connection.close()
        }
    }

    @Test func nothingButPairingBeforeAuthorizationAndClearErrorsAfter() async throws {
        try await withReceiver { receiver, media in
            let connection = try await controller(receiver)
            do {
                _ = try await connection.request(ReferenceRequest.Play.method, ["session": "s", "url": .string(media.url("tone.wav"))])
                Issue.record("played without pairing")
            } catch {
                #expect(code(of: error) == 2001)
                #expect("\(error)".contains("Bench TV needs pairing first"))
            }
            // Pair by hand, as PROTOCOL.md §3 says.
            let begun = try await connection.request(ReferenceRequest.PairBegin.method).result
            #expect(begun.objectValue?["authorization"] == ["type": "numericCode", "length": 4])
            let token = try await connection.request(ReferenceRequest.PairFinish.method, ["code": .string(try await receiver.pairingCode())]).result
            #expect(token.objectValue?["token"]?.stringValue?.count == 64)

            for (params, expected) in [
                (["session": "s", "url": "ftp://host/file.wav"] as JSONObject, 2010),
                (["session": "s", "url": .string(media.url("tone.wav")), "application": "org.example.nothing"], 2012),
                (["session": "s", "url": .string(media.url("nothing-here.wav"))], 2011),
            ] {
                do {
                    _ = try await connection.request(ReferenceRequest.Play.method, params)
                    Issue.record("\(params) played")
                } catch {
                    #expect(code(of: error) == expected, "\(error)")
                }
            }
            let large = Data(count: ReferenceProtocol.maximumApplicationMessage + 1).base64EncodedString()
            await #expect(throws: RPCError.self) {
                _ = try await connection.request(ReferenceRequest.AppSend.method, ["application": "org.mediaroute.echo", "data": .string(large)])
            }
            await #expect(throws: RPCError.self) {
                _ = try await connection.request(ReferenceRequest.Control.method, ["session": "never-started", "isPlaying": true])
            }
            await connection.close()
        }
    }

    @Test func aControllerThatVanishesLeavesItsSessionPausedForItsReturn() async throws {
        try await withReceiver(["--auth", "none"]) { receiver, media in
            let first = try await controller(receiver, id: "living-room-phone")
            let state = try await first.request(ReferenceRequest.Play.method, ["session": "film", "url": .string(media.url("tone.wav"))]).result
            #expect(state.objectValue?["state"] == "playing")
            #expect(state.objectValue?["duration"] == 30.0)
            // Play until the media has really advanced (ffmpeg starts slowly on a loaded machine).
            var reached = 0.0
            try await waitUntil("film plays past 1 s") {
                let state = try? await first.request(ReferenceRequest.Status.method).result
                reached = state?.objectValue?["sessions"]?.arrayValue?.first?.objectValue?["state"]?.objectValue?["position"]?.doubleValue ?? 0
                return reached > 1
            }
            await first.close()  // no stop: the controller just went away
            try await receiver.waitFor("paused film: test went away")

            // The same controller, back within the grace period, finds its session where it left it.
            let back = try await controller(receiver, id: "living-room-phone")
            let status = try await back.request(ReferenceRequest.Status.method).result
            let session = try #require(status.objectValue?["sessions"]?.arrayValue?.first?.objectValue)
            #expect(session["session"] == "film")
            #expect(session["state"]?.objectValue?["state"] == "paused")
            let position = try #require(session["state"]?.objectValue?["position"]?.doubleValue)
            // ffmpeg's progress reports lag its playback a little; the position may step back by that much.
            #expect(position > reached - 0.5 && position < reached + 3, "paused where it was (\(reached) s), not back at the start")
            // Another controller does not see it.
            let stranger = try await controller(receiver, id: "someone-else")
            #expect(try await stranger.request(ReferenceRequest.Status.method).result.objectValue?["sessions"] == [])
            await back.close()
            await stranger.close()
        }
    }
}
