import DACP
import RAOP
import Testing

/// The server on loopback, spoken to with raw HTTP: what it reports and what it answers, for each
/// command a receiver sends and for requests it must refuse without reporting anything.
@Suite struct DACPWireTests {
    let session = DACPSession.random()

    func withServer(limits: DACPServer.Limits = DACPServer.Limits(), _ body: (DACPServer, CommandLog) async throws -> Void) async throws {
        let log = CommandLog()
        let server = try await DACPServer.start(session: session, host: "127.0.0.1", limits: limits, onRefused: log.refused) { log.record($0) }
        do {
            try await body(server, log)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
        log.finish()
    }

    @Test func sessionValuesAreChecked() throws {
        #expect(throws: DACPError.self) { try DACPSession(dacpID: "abcdef0123456789", activeRemote: "1") }
        #expect(throws: DACPError.self) { try DACPSession(dacpID: "ABCDEF012345678", activeRemote: "1") }
        #expect(throws: DACPError.self) { try DACPSession(dacpID: "ABCDEF0123456789", activeRemote: "4294967296") }
        #expect(throws: DACPError.self) { try DACPSession(dacpID: "ABCDEF0123456789", activeRemote: "-1") }
        let valid = try DACPSession(dacpID: "ABCDEF0123456789", activeRemote: "1986535575")
        #expect(valid.serviceName == "iTunes_Ctrl_ABCDEF0123456789")
        #expect(try DACPSession(dacpID: "0BCDEF0123456789", activeRemote: "1").startsWithZero)
        // Made ids are valid and never 0-led (shairport-sync 3.3.8 could not match them).
        for _ in 0..<1000 {
            let made = DACPSession.random(), id = RAOPSenderConfiguration.randomDACPID()
            #expect(!made.startsWithZero && !id.hasPrefix("0"))
            #expect(throws: Never.self) { try DACPSession(dacpID: id, activeRemote: RAOPSenderConfiguration(host: "h").activeRemote) }
        }
    }

    @Test(.timeLimit(.minutes(1))) func everyCommandIsAnswered204AndReportedInOrder() async throws {
        try await withServer { server, log in
            let sent: [(String, DACPCommand)] = [
                ("playpause", .playPause), ("play", .play), ("pause", .pause), ("nextitem", .nextItem), ("previtem", .previousItem),
                ("volumeup", .volumeUp), ("volumedown", .volumeDown), ("mutetoggle", .muteToggle), ("stop", .stop),
                ("beginff", .beginFastForward), ("beginrew", .beginRewind), ("playresume", .playResume),
                ("setproperty?dmcp.device-volume=-15.000000", .setVolume(dB: -15)), ("setproperty?dmcp.device-volume=0", .setVolume(dB: 0)),
                ("setproperty?dmcp.device-volume=-144.0", .setVolume(dB: -144)),
            ]
            // One connection, kept alive, as a receiver may; then each on a new connection, as shairport-sync does.
            let probe = try HTTPProbe(port: server.port)
            defer { probe.close() }
            for (command, _) in sent {
                probe.send(Array("GET /ctrl-int/1/\(command) HTTP/1.1\r\nHost: x\r\nActive-Remote: \(session.activeRemote)\r\n\r\n".utf8))
                let answer = try probe.answer()
                #expect(answer.status == 204, "\(command): \(answer.status) \(answer.text)")
                // As iTunes answers, and as shairport-sync's HTTP reader needs to see the answer end.
                #expect(answer.head.lowercased().contains("\r\ncontent-length: 0"), "\(answer.head)")
            }
            for (command, _) in sent {
                #expect(try HTTPProbe.get("/ctrl-int/1/\(command)", port: server.port, activeRemote: session.activeRemote).status == 204)
            }
            #expect(log.commands == sent.map(\.1) + sent.map(\.1))
            #expect(log.refusals.isEmpty)
            #expect(server.counters.accepted == 2 * sent.count)
        }
    }

    @Test(.timeLimit(.minutes(1))) func aWrongOrMissingActiveRemoteIsRefused403AndReportedNowhere() async throws {
        try await withServer { server, log in
            let wrong = String((UInt32(session.activeRemote)! &+ 1))
            for remote in [wrong, nil, "", session.activeRemote + "0", " \(session.activeRemote)x"] {
                let answer = try HTTPProbe.get("/ctrl-int/1/play", port: server.port, activeRemote: remote)
                #expect(answer.status == 403, "Active-Remote \(remote ?? "none"): \(answer.status)")
            }
            // Two Active-Remote headers, one of them right: refused too.
            let doubled = try HTTPProbe.get("/ctrl-int/1/play", port: server.port, activeRemote: session.activeRemote, extraHeaders: "Active-Remote: \(wrong)\r\n")
            #expect(doubled.status == 403)
            #expect(log.commands.isEmpty)
            #expect(log.refusals.count == 6 && log.refusals.allSatisfy { $0.code == .forbidden })
            #expect(try HTTPProbe.get("/ctrl-int/1/pause", port: server.port, activeRemote: session.activeRemote).status == 204)
            #expect(log.commands == [.pause])
        }
    }

    @Test(.timeLimit(.minutes(1))) func badRequestsGetAClearErrorAndChangeNothing() async throws {
        try await withServer { server, log in
            let remote = session.activeRemote
            let cases: [(String, Int, DACPError.Code)] = [
                ("/ctrl-int/1/shuffle_songs", 400, .unknownCommand),
                ("/ctrl-int/1/getproperty?properties=dmcp.volume", 400, .unknownCommand),  // shairport-sync's probe: 400 = not an advanced remote
                ("/ctrl-int/1/playstatusupdate?revision-number=1", 400, .unknownCommand),
                ("/ctrl-int/1/setproperty?dmcp.volume=50", 400, .unknownCommand),
                ("/ctrl-int/1/setproperty?dmcp.device-volume=loud", 400, .badValue),
                ("/ctrl-int/1/setproperty?dmcp.device-volume=", 400, .badValue),
                ("/ctrl-int/1/setproperty?dmcp.device-volume=nan", 400, .badValue),
                ("/ctrl-int/1/setproperty?dmcp.device-volume=1e400", 400, .badValue),
                ("/ctrl-int/1/setproperty?dmcp.device-volume=3", 400, .badValue),
                ("/ctrl-int/1/setproperty?dmcp.device-volume=-60", 400, .badValue),
                ("/ctrl-int/1/setproperty?dmcp.device-volume=--1", 400, .badValue),
                ("/ctrl-int/1/play?x=1", 400, .badValue),
                ("/ctrl-int/1/", 400, .unknownCommand),
                ("/ctrl-int/2/play", 404, .notFound),
                ("/", 404, .notFound),
                ("/ctrl-int/1/" + String(repeating: "a", count: 600), 414, .requestTooLarge),
            ]
            for (target, status, code) in cases {
                let answer = try HTTPProbe.get(target, port: server.port, activeRemote: remote)
                #expect(answer.status == status, "\(target): \(answer.status) \(answer.text)")
                #expect(!answer.text.isEmpty, "\(target): no sentence")
                #expect(log.refusals.last?.code == code, "\(target)")
            }
            let post = try HTTPProbe(port: server.port)
            defer { post.close() }
            post.send(Array("POST /ctrl-int/1/play HTTP/1.1\r\nActive-Remote: \(remote)\r\nContent-Length: 0\r\n\r\n".utf8))
            #expect(try post.answer().status == 405)
            #expect(log.refusals.last?.code == .methodNotAllowed)
            #expect(log.commands.isEmpty)
            #expect(server.counters.refused == cases.count + 1)
            print("DACP refusals, as logged:\n" + log.refusals.map { "  \($0)" }.joined(separator: "\n"))
        }
    }

    /// Headers or a body past the request budget: 431 and the connection closed, nothing reported;
    /// the server serves the next connection as before. Memory per connection stays bounded.
    @Test(.timeLimit(.minutes(1))) func oversizedRequestsAreRefusedAndTheConnectionClosed() async throws {
        try await withServer(limits: DACPServer.Limits(requestBytes: 4096)) { server, log in
            let flood = try HTTPProbe(port: server.port)
            defer { flood.close() }
            var request = "GET /ctrl-int/1/play HTTP/1.1\r\nActive-Remote: \(session.activeRemote)\r\n"
            for index in 0..<2000 { request += "X-Filler-\(index): \(String(repeating: "z", count: 40))\r\n" }
            flood.send(Array((request + "\r\n").utf8))
            let answer = try flood.answer()
            #expect(answer.status == 431, "\(answer.status) \(answer.text)")
            #expect(flood.closedByServer())

            let body = try HTTPProbe(port: server.port)
            defer { body.close() }
            body.send(Array("GET /ctrl-int/1/play HTTP/1.1\r\nActive-Remote: \(session.activeRemote)\r\nContent-Length: 100000\r\n\r\n".utf8) + [UInt8](repeating: 0x41, count: 100_000))
            #expect(try body.answer().status == 431)
            #expect(log.commands.isEmpty)
            #expect(try HTTPProbe.get("/ctrl-int/1/play", port: server.port, activeRemote: session.activeRemote).status == 204)
            #expect(log.commands == [.play])
        }
    }

    /// Connections beyond the limit are closed at once; those within it are served.
    @Test(.timeLimit(.minutes(1))) func connectionsBeyondTheLimitAreClosed() async throws {
        try await withServer(limits: DACPServer.Limits(connections: 2)) { server, log in
            let first = try HTTPProbe(port: server.port), second = try HTTPProbe(port: server.port)
            defer { first.close(); second.close() }
            // Both admitted: each gets an answer on its connection.
            for probe in [first, second] {
                probe.send(Array("GET /ctrl-int/1/play HTTP/1.1\r\nActive-Remote: \(session.activeRemote)\r\n\r\n".utf8))
                #expect(try probe.answer().status == 204)
            }
            let third = try HTTPProbe(port: server.port)
            defer { third.close() }
            #expect(third.closedByServer())
            #expect(log.commands == [.play, .play])
        }
    }
}
