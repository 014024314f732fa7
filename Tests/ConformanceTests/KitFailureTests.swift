import Foundation
import MediaRouteIPC
import Testing

/// Each check the kit makes can fail: variants of the Python example driver (the example imported
/// and patched, nothing of it copied), each breaking one clause the way a real driver could, and
/// the kit must name exactly those clauses, while the checks that have nothing to do with the
/// faults still pass.
@Suite("Conformance kit: checks that fail", .serialized)
struct KitFailureTests {
    /// The variant's hello says what §4 forbids; `Connection.open` would refuse it before any check
    /// could judge it, so these fail only because the kit reads the hello raw.
    @Test("a hello with version 2, role app, maxFrameLength 100 and a number among its features fails each of those checks", .timeLimit(.minutes(2)))
    func wrongHello() async throws {
        try await withVariant("""
            send = lamp_driver.Channel.send
            def wrong_hello(self, message):
                if message.get("method") == "hello":
                    message["params"].update(version=2, role="app", maxFrameLength=100, features=["fd-passing", 1])
                send(self, message)
            lamp_driver.Channel.send = wrong_hello
            """) { run in
            #expect(run.status == .exited(1))
            expectFailed(run, "§4 Handshake: version is 1", containing: "announced version 2")
            expectFailed(run, "§4 Handshake: role is \"driver\"", containing: "\"app\"")
            expectFailed(run, "§4 Handshake: maxFrameLength is", containing: "maxFrameLength is 100")
            expectFailed(run, "§4 Handshake: features is an array of strings", containing: "[\"fd-passing\",1]")
            expectPassed(run, "§4 Handshake: identity has a non-empty name")
        }
    }

    /// One driver, six faults, each caught by its own check only. (The kit before these checks were
/// fixed passed this driver entirely.)
    @Test("a driver with six faults fails exactly the six checks that catch them", .timeLimit(.minutes(2)))
    func sixFaults() async throws {
        try await withVariant("""
            import os
            # 1. fds outside 0…16 taken as a descriptor mismatch: -32007 and the connection closed (§5 said so before).
            shape = lamp_driver.message_shape
            discoveries = set()
            def message_shape(value):
                fds = value.get("fds", 0) if isinstance(value, dict) else 0
                if not isinstance(fds, int) or isinstance(fds, bool) or not 0 <= fds <= 16:
                    raise lamp_driver.ProtocolError(-32007, "fds out of range", closes=True)
                kind, message = shape(value)
                # 5. an rpc.cancel naming a discovery.start is fatal.
                if kind == "request" and message["method"] == "discovery.start":
                    discoveries.add(message["id"])
                if kind == "notification" and message["method"] == "rpc.cancel" and (message.get("params") or {}).get("id") in discoveries:
                    os._exit(70)
                return kind, message
            lamp_driver.message_shape = message_shape
            # 2. a hello left unanswered is waited on for ever.
            lamp_driver.HANDSHAKE_SECONDS = 3600
            # 3. playback.state every 1.4 s only (one within 1.5 s of any moment, so watching for one is not enough).
            lamp_driver.PLAYBACK_STATE_SECONDS = 1.4
            # 4. one more playback.state right after the answer to session.stop, and to device.deactivate.
            stop = lamp_driver.LampDriver.stop_session
            def stop_session(self, params):
                playback = self.playbacks.get(params.get("session"))
                stop(self, params)
                if playback:
                    self.notify("playback.state", {"session": params["session"], "state": playback.state()})
            lamp_driver.LampDriver.stop_session = stop_session
            deactivate = lamp_driver.LampDriver.deactivate
            def deactivate_then_talk(self, params):
                deactivate(self, params)
                self.notify("playback.state", {"session": params["session"], "state": lamp_driver.Playback("http://lamp/").state()})
            lamp_driver.LampDriver.deactivate = deactivate_then_talk
            # Not a fault: each answer and the notifications after it go in one write, so they arrive in
            # one read, and a late notification is in the kit's log before the call that got the answer returns.
            import json, struct
            answer = lamp_driver.LampDriver.answer
            def answer_in_one_write(self, message):
                frames = []
                self.channel.send = frames.append
                try:
                    answer(self, message)
                finally:
                    del self.channel.send
                bodies = [json.dumps(m, separators=(",", ":")).encode() for m in frames]
                self.channel.sock.sendall(b"".join(struct.pack(">I", len(b)) + b for b in bodies))
            lamp_driver.LampDriver.answer = answer_in_one_write
            """) { run in
            #expect(run.status == .exited(1))
            expectFailed(run, "§5 File descriptors: an \"fds\" outside 0…16", containing: "-32007")
            expectFailed(run, "§4 Handshake: a hello left unanswered", containing: "still open")
            expectFailed(run, "§11.2 Sessions and playback: playback.state follows at least every second", containing: "no playback.state for")
            expectFailed(run, "§11.2 Sessions and playback: after session.stop is answered", containing: "playback.state")
            expectFailed(run, "§11.2 Deactivation: device.deactivate is answered", containing: "after device.deactivate was answered")
            expectFailed(run, "§7 Cancellation: a request whose work goes on", containing: "discovery.stop got")
            // What the faults do not touch still passes: the failures are the checks', not the run's.
            for clause in ["§4 Handshake: version is 1", "§5 File descriptors: a descriptor with a frame that names none",
                           "§11.2 Sessions and playback: session.start is answered", "§11.2 Sessions and playback: playback.set {volume: 0.5}",
                           "§11 Heartbeats: after the handshake", "§11.2 Activation and pairing: pairing with the right code"] {
                expectPassed(run, clause)
            }
        }
    }

    private func expectFailed(_ run: KitRun, _ clause: String, containing detail: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let failed = run.checks("fail").filter { $0.hasPrefix(clause) }
        #expect(failed.count == 1 && failed[0].contains(detail), "\(clause) should fail with \(detail); failed:\n\(run.checks("fail").joined(separator: "\n"))",
                sourceLocation: sourceLocation)
    }

    private func expectPassed(_ run: KitRun, _ clause: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(run.checks("pass").contains { $0.hasPrefix(clause) }, "\(clause) should pass; failed:\n\(run.checks("fail").joined(separator: "\n"))",
                sourceLocation: sourceLocation)
    }

    /// Runs the kit on the Python example with `patch` applied (Python, `lamp_driver` imported),
    /// from a scratch directory removed afterwards; no bytecode is written beside the example.
    private func withVariant(_ patch: String, _ body: (KitRun) throws -> Void) async throws {
        let directory = NSTemporaryDirectory() + "/conformance-variant-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let example = KitRun.repository + "/IPC/Examples/python-driver"
        let script = """
            #!/usr/bin/env python3
            import sys
            sys.dont_write_bytecode = True
            sys.path.insert(0, \(String(decoding: JSONWriter.encode(.string(example)), as: UTF8.self)))
            import lamp_driver
            \(patch)
            lamp_driver.main()

            """
        let driver = directory + "/variant.py"
        try Data(script.utf8).write(to: URL(fileURLWithPath: driver))
        chmod(driver, 0o755)
        let manifest: JSONValue = ["protocol": "org.mediaroute.example.lamp",
                                   "exportedType": ["identifier": "org.mediaroute.example.lamp", "conformsTo": ["public.media-sharing-protocol"],
                                                    "description": "Lamp (a faulty variant)"],
                                   "executable": .string(driver), "arguments": ["--pairing-code", "2468"],
                                   "timeouts": ["requestMilliseconds": 5000, "idleExitMilliseconds": 30000]]
        let path = directory + "/org.mediaroute.example.lamp.json"
        try Data(JSONWriter.encode(manifest)).write(to: URL(fileURLWithPath: path))
        try body(try await KitRun.run(path, ["--pairing-code", "2468"]))
    }
}
