import Foundation
@testable import MediaRouteIPC
import PrivateDaemons
import ReferenceProtocol
import Testing
import TestSupport

/// The receiver on a LAN with someone hostile on it (issue 13): strangers holding connections open,
/// guessing codes and crowding pairing out, and a paired controller probing the receiver's disk.
/// Strangers come from other loopback addresses (127.0.0.2, ...: still this machine).
@Suite("Reference receiver: a hostile LAN", .serialized, .timeLimit(.minutes(3)))
struct HostileLANTests {
    /// The methods these tests send by hand (as a stranger on the LAN would), named by their types.
    enum Method {
        static let authToken = ReferenceRequest.AuthToken.method
        static let pairBegin = ReferenceRequest.PairBegin.method
        static let pairFinish = ReferenceRequest.PairFinish.method
        static let play = ReferenceRequest.Play.method
        static let status = ReferenceRequest.Status.method
    }

    /// A private Avahi, a receiver on it, and media served over HTTP from `root/media`, for `body`;
    /// all stopped afterwards, whatever happens.
    private func withReceiver(_ arguments: [String] = [], openFileLimit: Int? = nil,
                              _ body: (ReceiverProcess, MediaFileServer, _ mediaDirectory: String) async throws -> Void) async throws {
        let root = NSTemporaryDirectory() + "mediaroute-hostile-\(UUID().uuidString.prefix(8))"
        let directory = root + "/media"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let avahi = try await PrivateAvahi()
        var media: MediaFileServer?, receiver: ReceiverProcess?
        try await withTearDown {
            try await MediaFileServer.makeTone(at: directory + "/tone.wav", seconds: 30, title: "Long Tone")
            media = try await MediaFileServer(directory: directory)
            receiver = try ReceiverProcess(name: "Bench TV", avahi: avahi, root: root, arguments: arguments, openFileLimit: openFileLimit)
            try await receiver!.waitUntilAnnounced()
            try await body(receiver!, media!, directory)
        } tearDown: {
            await receiver?.stop()
            await media?.stop()
            await avahi.stop()
        }
    }

    /// A controller connection from `source`, as a driver written from the spec would open it;
    /// its hello's name is `name`, else its id.
    private func controller(_ receiver: ReceiverProcess, id: String, name: String? = nil, from source: String = "127.0.0.1") async throws -> Connection {
        let fd = try await Self.connect(from: source, to: try #require(receiver.port))
        return try await Connection.open(socket: fd, hello: Hello(role: .controller, name: name ?? id, identity: ["controllerId": .string(id)]),
                                         side: .initiator(acceptingRoles: [.receiver]), configuration: ConnectionConfiguration(label: "receiver"))
    }

    /// A TCP socket connected to the receiver on 127.0.0.1 from the loopback address `source`.
    private static func connect(from source: String, to port: UInt16) async throws -> Int32 {
        try await onThreadOfItsOwn {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { throw IPCSystemError("socket") }
            var limit = timeval(tv_sec: 3, tv_usec: 0)  // a blocking connect gives up after SO_SNDTIMEO
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
            let size = socklen_t(MemoryLayout<sockaddr_in>.size)
            do {
                var from = try sockaddr_in(numericHost: source, port: 0, for: "bind \(source)")
                var to = try sockaddr_in(numericHost: "127.0.0.1", port: port, for: "connect")
                guard withUnsafePointer(to: &from, { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, size) } }) == 0 else {
                    throw IPCSystemError("bind \(source)")
                }
                guard withUnsafePointer(to: &to, { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, size) } }) == 0 else {
                    throw IPCSystemError("connect from \(source) to port \(port)")
                }
            } catch {
                close(fd)
                throw error
            }
            return fd
        }
    }

    /// Pairs `connection` (whose hello said `name`) by the code the receiver shows; returns the token.
    @discardableResult
    private func pair(_ connection: Connection, as name: String, on receiver: ReceiverProcess) async throws -> String {
        _ = try await connection.request(Method.pairBegin)
        let code = try await receiver.pairingCode(for: name)
        return try #require(try await connection.request(Method.pairFinish, ["code": .string(code)]).result.objectValue?["token"]?.stringValue)
    }

    /// The receiver's refusal of `work`, or nil if it did not refuse.
    private func refusal(_ work: () async throws -> Void) async -> RPCError? {
        do {
            try await work()
            return nil
        } catch {
            return error as? RPCError ?? RPCError(.internalError, "\(error)")
        }
    }

    private func waitUntilClosed(_ connection: Connection, _ what: String, seconds: Double = 15) async throws {
        try await waitUntil(what, seconds: seconds) { await connection.closeReason != nil }
    }

    private func isOpen(_ connection: Connection) async -> Bool { await connection.closeReason == nil }

    // MARK: Connections that never pair

    @Test func unpairedConnectionsAreClosedWhenIdleOrTooOldAndPairedOnesStay() async throws {
        try await withReceiver(["--unpaired-idle-seconds", "1", "--unpaired-lifetime-seconds", "6"]) { receiver, _, _ in
            let paired = try await controller(receiver, id: "paired")
            try await pair(paired, as: "paired", on: receiver)
            let idler = try await controller(receiver, id: "idler")
            let typist = try await controller(receiver, id: "slow-typist")
            let opened = ContinuousClock.now
            _ = try await typist.request(Method.pairBegin)

            // Asks nothing: closed after its idle second, and the receiver says so.
            try await waitUntilClosed(idler, "the idle connection is closed")
            try await receiver.waitFor("closed the unpaired connection of idler from 127.0.0.1:")
            #expect(receiver.console.lastLine(startingWith: "closed the unpaired connection of idler")?.hasSuffix(": idle 1 s without pairing") == true)

            // Its code pending, the typist is left alone past the idle time, until the unpaired lifetime.
            try await waitUntilClosed(typist, "the pairing connection is closed at the end of its lifetime")
            #expect(ContinuousClock.now - opened > .seconds(5))
            let line = receiver.console.lastLine(startingWith: "closed the unpaired connection of slow-typist")
            #expect(line?.hasSuffix(": open 6 s without pairing, the longest an unpaired connection may stay") == true, "\(line ?? receiver.output)")

            // The paired connection, older than that lifetime, is served as ever.
            #expect(await isOpen(paired))
            #expect(try await paired.request(Method.status).result.objectValue?["volume"] == .double(0.5))
            await paired.close()
        }
    }

    @Test func capsCloseTheOldestOfTheAddressHoldingTheMostNeverAPairedConnection() async throws {
        try await withReceiver(["--unpaired-per-address", "3", "--unpaired-total", "5"]) { receiver, _, _ in
            let paired = try await controller(receiver, id: "paired")
            try await pair(paired, as: "paired", on: receiver)

            // One address past its cap: its own oldest goes.
            var flooder: [Connection] = []
            for n in 1...4 { flooder.append(try await controller(receiver, id: "a\(n)", from: "127.0.0.2")) }
            try await waitUntilClosed(flooder[0], "a1 is closed when 127.0.0.2 opens a fourth")
            try await receiver.waitFor("closed the unpaired connection of a1 from 127.0.0.2:")
            #expect(receiver.console.lastLine(startingWith: "closed the unpaired connection of a1")?
                .hasSuffix(": 127.0.0.2 may keep 3 unpaired connections open at once") == true)

            // Five unpaired in all (a2-a4, b1, b2): one more, from anyone, closes the flooder's oldest.
            var other: [Connection] = []
            for n in 1...2 { other.append(try await controller(receiver, id: "b\(n)", from: "127.0.0.3")) }
            let newcomer = try await controller(receiver, id: "newcomer", from: "127.0.0.4")
            try await waitUntilClosed(flooder[1], "a2 is closed to make room for the newcomer")
            #expect(receiver.console.lastLine(startingWith: "closed the unpaired connection of a2")?
                .hasSuffix(": the receiver keeps 5 unpaired connections at most and 127.0.0.2 holds the most (3)") == true, "\(receiver.output)")

            // The newcomer is served, and nobody else was closed: the paired connection least of all.
            try await pair(newcomer, as: "newcomer", on: receiver)
            for connection in [paired, flooder[2], flooder[3]] + other { #expect(await isOpen(connection)) }
            #expect(try await paired.request(Method.status).result.objectValue?["volume"] == .double(0.5))
            for connection in [paired, newcomer] + flooder + other { await connection.close() }
        }
    }

    /// The attack of issue 13 at scale: with the receiver's descriptors limited to 128, a stranger
    /// opens 300 connections from 75 addresses and keeps them. Paired controllers still get in.
    @Test func aFloodOfUnpairedConnectionsDoesNotStarvePairedControllers() async throws {
        try await withReceiver(openFileLimit: 128) { receiver, _, _ in
            let phone = try await controller(receiver, id: "phone")
            let token = try await pair(phone, as: "phone", on: receiver)

            var flood: [Connection] = []
            for host in 2...76 {
                for n in 1...4 { flood.append(try await controller(receiver, id: "flood-\(host)-\(n)", from: "127.0.0.\(host)")) }
            }
            // The receiver keeps 64 unpaired at most (the default), closing the oldest of the largest address.
            try await waitUntil("at most 64 of the flood's connections open") {
                var open = 0
                for connection in flood where await isOpen(connection) { open += 1 }
                return open <= 64
            }
            try await receiver.waitFor("unpaired connections at most and 127.0.0.")

            // The paired controller's connection was never touched, and it connects again with its token.
            #expect(await isOpen(phone))
            let again = try await controller(receiver, id: "phone")
            _ = try await again.request(Method.authToken, ["token": .string(token)])
            #expect(try await again.request(Method.status).result.objectValue?["volume"] == .double(0.5))
            #expect(receiver.process.exitIfEnded() == nil)
            for connection in [phone, again] + flood { await connection.close() }
        }
    }

    // MARK: Pairing

    @Test func strangersCannotUseBlockOrEvictAPairingInProgress() async throws {
        try await withReceiver { receiver, _, _ in
            // A person starts pairing their phone; the receiver shows a code.
            let phone = try await controller(receiver, id: "phone")
            _ = try await phone.request(Method.pairBegin)
            let code = try await receiver.pairingCode(for: "phone")

            // A stranger claiming the phone's controller id cannot finish with that code: it is the phone connection's.
            let impostor = try await controller(receiver, id: "phone", name: "impostor", from: "127.0.0.2")
            let taken = await refusal { _ = try await impostor.request(Method.pairFinish, ["code": .string(code)]) }
            #expect(taken?.code.rawValue == 2004, "\(String(describing: taken))")

            // Guessing its own code, the stranger locks itself out, not the phone.
            _ = try await impostor.request(Method.pairBegin)
            let shown = try await receiver.pairingCode(for: "impostor")
            let guess = shown == "0000" ? "1111" : "0000"
            for left in [2, 1] {
                let wrong = await refusal { _ = try await impostor.request(Method.pairFinish, ["code": .string(guess)]) }
                #expect(wrong?.code.rawValue == 2002 && wrong?.data?.objectValue?["attemptsLeft"] == .integer(Int64(left)), "\(String(describing: wrong))")
            }
            let locked = await refusal { _ = try await impostor.request(Method.pairFinish, ["code": .string(guess)]) }
            #expect(locked?.code.rawValue == 2003 && locked?.data?.objectValue?["retryAfterSeconds"] == 30, "\(String(describing: locked))")
            #expect(locked?.message == "too many wrong codes; pairing is locked for 30 more seconds")
            // Now even the code it was shown is refused, and so is a new pair.begin from its address, whatever id it claims.
            let refused = await refusal { _ = try await impostor.request(Method.pairFinish, ["code": .string(shown)]) }
            #expect(refused?.code.rawValue == 2003)
            let renamed = try await controller(receiver, id: "someone-new", from: "127.0.0.2")
            #expect(await refusal { _ = try await renamed.request(Method.pairBegin) }?.code.rawValue == 2003)

            // Strangers begin pairing from made-up ids on six addresses: past 3 per address, and past 16
            // pending in all, they are refused (with when to retry); nothing in progress is evicted.
            var flood: [Connection] = []
            var refusedForTheAddress = 0, refusedForTheReceiver = 0
            for host in 3...8 {
                for n in 1...4 {
                    let stranger = try await controller(receiver, id: "made-up-\(host)-\(n)", from: "127.0.0.\(host)")
                    flood.append(stranger)
                    guard let refused = await refusal({ _ = try await stranger.request(Method.pairBegin) }) else { continue }
                    #expect(refused.code.rawValue == 2003 && (refused.data?.objectValue?["retryAfterSeconds"]?.integerValue ?? 0) > 0)
                    if refused.message.hasPrefix("3 pairings from 127.0.0.\(host) are already waiting for their codes") { refusedForTheAddress += 1 }
                    if refused.message.hasPrefix("16 pairings are already waiting for their codes on this receiver") { refusedForTheReceiver += 1 }
                }
            }
            // 127.0.0.3-7 fill the table (the phone and 15 more); each one's fourth is refused, and all of 127.0.0.8's.
            #expect(refusedForTheAddress == 5 && refusedForTheReceiver == 4, "\(receiver.output)")

            // The person types the code they were shown: the phone pairs.
            let token = try await phone.request(Method.pairFinish, ["code": .string(code)]).result.objectValue?["token"]?.stringValue
            #expect(token?.count == 64)
            for connection in [phone, impostor, renamed] + flood { await connection.close() }
        }
    }

    // MARK: The receiver's disk

    @Test func fileURLsAreRefusedUnreadAndFailedFetchesNameNothingOnTheReceiversDisk() async throws {
        try await withReceiver(["--auth", "none"]) { receiver, media, directory in
            let link = try await controller(receiver, id: "prober")
            func play(_ url: String) async -> RPCError? {
                await refusal { _ = try await link.request(Method.play, ["session": "s", "url": .string(url)]) }
            }
            // A file on the receiver's disk and one that is not there: the same refusal, unread.
            let files = [await play("file://\(directory)/tone.wav"), await play("file://\(directory)/missing.wav")]
            #expect(files.map { $0?.code.rawValue } == [2010, 2010])
            #expect(files[0]?.message == files[1]?.message)
            #expect(files[0]?.message == "Bench TV plays only http and https URLs: it cannot read files on the controller's machine, so serve the file over HTTP")

            // Over HTTP, playlists naming a file on the receiver's disk that exists, and one that does
            // not: the same failure, naming no path.
            var reasons: [String] = []
            for (name, entry) in [("exists.m3u8", "\(directory)/tone.wav"), ("missing.m3u8", "\(directory)/missing.wav")] {
                try "#EXTM3U\n#EXT-X-TARGETDURATION:30\n#EXTINF:30,\nfile://\(entry)\n#EXT-X-ENDLIST\n"
                    .write(toFile: "\(directory)/\(name)", atomically: true, encoding: .utf8)
                let failed = await play(media.url(name))
                #expect(failed?.code.rawValue == 2011, "\(String(describing: failed))")
                reasons.append(failed?.message.replacingOccurrences(of: media.url(name), with: "URL") ?? "")
            }
            #expect(reasons[0] == reasons[1], "\(reasons)")
            #expect(!reasons.contains { $0.contains(directory) || $0.contains("file:") || $0.contains("No such file") }, "\(reasons)")

            // What the server says is said; and media served over HTTP plays.
            #expect(await play(media.url("nothing-here.wav"))?.message == "cannot play \(media.url("nothing-here.wav")): the server answered 404 Not Found")
            let state = try await link.request(Method.play, ["session": "s", "url": .string(media.url("tone.wav"))]).result
            #expect(state.objectValue?["state"] == "playing")
            await link.close()
        }
    }
}
