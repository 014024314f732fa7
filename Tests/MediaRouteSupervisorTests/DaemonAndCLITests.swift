import Foundation
import Glibc
import MediaRouteIPC
import PrivateDaemons
import Testing
import TestSupport

@Suite("mediarouted and the mediaroute CLI, as real processes", .timeLimit(.minutes(2)))
struct DaemonAndCLITests {
    @Test func theCLISaysWhenNoDaemonRuns() async throws {
        try await DaemonHarness.run { harness in
            let result = await harness.cli(["drivers"])
            #expect(result.status == .exited(1))
            #expect(result.error.contains("mediarouted is not running (nothing listens on \(harness.socket))"))
        }
    }

    @Test(arguments: [
        (["volume", "TV", "abc"], "volume must be 0-100 (percent), +N, -N, mute or unmute; got \"abc\""),
        (["volume", "TV", "150"], "volume must be 0-100"),
        (["seek", "--", "-3"], "the position must be zero or more seconds"),
        (["play", "not a url", "--to", "TV"], "\"not a url\" is not an http, https, rtsp or file URL"),
        (["devices", "--wait", "9999"], "--wait must be from 0 to 600 seconds"),
        (["teleport"], "Unexpected argument 'teleport'"),
        (["seek", "-5"], "the position must be zero or more seconds, not -5"),
        (["seek"], "seek needs a position, in seconds from the start"),
        (["devices", "--wait", "-1"], "--wait must be from 0 to 600 seconds, not -1.0"),
        (["activate", "TV", "--code", ""], "--code must not be empty; leave it out to be asked for the code"),
    ])
    func badArgumentsAreUsageErrors(_ arguments: [String], _ message: String) async throws {
        try await DaemonHarness.run { harness in
            let result = await harness.cli(arguments)
            #expect(result.status == .exited(64), "\(result.error)")
            #expect(result.error.contains(message), "\(result.error)")
        }
    }

    @Test func anOperatorDiscoversActivatesPlaysAndControlsVolume() async throws {
        try await DaemonHarness.run { harness in
            try harness.drivers.addDriver("org.test.alpha", devices: ["Living Room TV", "Kitchen Radio"])
            try await harness.start()

            let devices = await harness.cli(["devices", "--until", "2", "--wait", "30", "--json"])
            #expect(devices.status == .exited(0), "\(devices.error)")
            #expect(Set(devices.json?.arrayValue?.compactMap { $0.objectValue?["name"]?.stringValue } ?? []) == ["Living Room TV", "Kitchen Radio"])

            let activated = await harness.cli(["--json", "activate", "living room tv"])
            #expect(activated.json?.objectValue?["protocol"] == "org.test.alpha", "\(activated.error)")
            let level = await harness.cli(["volume", "Living Room TV", "40", "--json"]).json?.objectValue?["volume"]?.doubleValue
            #expect(abs((level ?? 0) - 0.4) < 1e-6)  // drivers keep volume as Float
            #expect(await harness.cli(["volume", "Living Room TV", "+2", "--json"]).json?.objectValue?["volume"] == .double(0.5))
            let muted = await harness.cli(["volume", "Living Room TV", "mute"])
            #expect(muted.output == "Living Room TV: volume 50%, muted\n")

            let bad = await harness.cli(["play", "http://127.0.0.1:9/notes.txt", "--to", "Living Room TV"])
            #expect(bad.status == .exited(1))
            #expect(bad.error.contains("cannot play notes.txt: not a media file"))
            let playing = await harness.cli(["play", "http://127.0.0.1:9/film.mp4", "--to", "Living Room TV", "--json"])
            #expect(playing.json?.objectValue?["playback"]?.objectValue?["state"] == "playing", "\(playing.error)")
            #expect(await harness.cli(["pause", "--json"]).json?.objectValue?["playback"]?.objectValue?["state"] == "paused")
            #expect(await harness.cli(["seek", "12", "--json"]).json?.objectValue?["playback"]?.objectValue?["position"] == .double(12))
            #expect(await harness.cli(["resume", "--on", "Living Room TV", "--json"]).json?.objectValue?["playback"]?.objectValue?["isPlaying"] == true)
            let sessions = await harness.cli(["sessions"])
            #expect(sessions.output.contains("Living Room TV  Test alpha  s1       playing"))
            #expect(sessions.output.contains("http://127.0.0.1:9/film.mp4"))

            // The test driver runs one session at a time: a second device is refused, with the reason.
            let second = await harness.cli(["activate", "Kitchen Radio"])
            #expect(second.status == .exited(1))
            #expect(second.error.contains("runs one session at a time and Living Room TV is active"))

            #expect(await harness.cli(["stop"]).status == .exited(0))
            #expect(await harness.cli(["deactivate", "Living Room TV"]).status == .exited(0))
            let status = await harness.cli(["status", "--json"])
            #expect(status.json?.objectValue?["routes"]?.arrayValue?.isEmpty == true)
            #expect(await harness.cli(["volume", "Living Room TV"]).error.contains("\"Living Room TV\" is not active"))
        }
    }

    /// The daemon shows what plays on the session bus it is given (`--mpris-bus`; a desktop
    /// session's own by default): `playerctl` there lists it and pauses it.
    @Test func theDaemonShowsWhatPlaysOnTheSessionBusItIsGiven() async throws {
        let bus = try PrivateBus(kind: .session)
        defer { bus.stop() }
        try await DaemonHarness.run { harness in
            try harness.drivers.addDriver("org.test.alpha", devices: ["Living Room TV"])
            try await harness.start(["--mpris-bus", bus.address])
            #expect(await harness.cli(["activate", "Living Room TV"]).status == .exited(0))
            #expect(await harness.cli(["play", "http://127.0.0.1:9/film.mp4", "--to", "Living Room TV"]).status == .exited(0))
            func playerctl(_ arguments: [String]) async -> String {
                let run = try? await CapturedCommand.run("/usr/bin/playerctl", arguments, environment: ["DBUS_SESSION_BUS_ADDRESS": bus.address], timeout: .seconds(5))
                return run?.output.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
            }
            try await waitUntil("the player on the bus") { await playerctl(["-l"]).hasPrefix("mediaroute.") }
            _ = await playerctl(["pause"])
            try await waitUntil("paused at the device") { await harness.cli(["status", "--json"]).output.contains("\"paused\"") }
            #expect(await playerctl(["status"]) == "Paused")
        }
    }

    /// 30 % reaches the driver as 0.3, what the person typed, not a Float's 0.30000001192092896: a
    /// driver written in another language reads the number off the wire as it is written there.
    @Test func aVolumeOf30PercentReachesTheDriverAsTyped() async throws {
        try await DaemonHarness.run { harness in
            try WireProbeDriver.install(in: harness.drivers, protocol: "org.test.probe")
            try await harness.start()
            let name = WireProbeDriver.deviceName
            let listed = await harness.cli(["devices", "--until", "1", "--wait", "30"])
            #expect(listed.output.contains(name), "\(listed.error) | daemon log: \(harness.log.suffix(1500))")
            let activated = await harness.cli(["activate", name])
            #expect(activated.status == .exited(0), "\(activated.error)")

            let set = await harness.cli(["volume", name, "30%"])
            #expect(set.output == "\(name): volume 30%\n", "\(set.error)")
            try await waitUntil("the driver logged what it received") { !WireProbeDriver.volumesReceived(in: harness.log).isEmpty }
            #expect(WireProbeDriver.volumesReceived(in: harness.log) == ["0.3"])
            // The route's volume, as the driver reports it back, is the same 0.3 for scripts.
            #expect(await harness.cli(["volume", name, "--json"]).json?.objectValue?["volume"] == .double(0.3))
        }
    }

    /// `devices --until N` lists the moment the Nth device appears: it waits on the picker's
    /// `picker.changed`, not for --wait to run out.
    @Test func devicesUntilListsAsSoonAsTheDeviceAppears() async throws {
        try await DaemonHarness.run { harness in
            try harness.drivers.addDriver("org.test.until", devices: ["First Speaker"])
            try await harness.start()
            async let listing = harness.cli(["devices", "--until", "2", "--wait", "120"])
            // Its picker started the driver, which found the first device; the second is not on the network yet.
            try await waitUntil("the first device found") {
                await harness.cli(["devices", "--wait", "0", "--json"]).json?.arrayValue?.count == 1
            }
            try harness.drivers.command("org.test.until", "find:Second Speaker")
            let appeared = ContinuousClock.now
            let listed = await listing
            let waited = ContinuousClock.now - appeared
            #expect(listed.status == .exited(0), "\(listed.error)")
            #expect(listed.output.contains("First Speaker") && listed.output.contains("Second Speaker"), "\(listed.output)")
            #expect(waited < .seconds(10), "listed \(waited) after the second device appeared; --wait was 120 s")
        }
    }

    @Test func pairingCodesAreCheckedAndNoAnswerCancels() async throws {
        try await DaemonHarness.run { harness in
            try harness.drivers.addDriver("org.test.secure", devices: ["Secure TV"])
            try await harness.start()
            _ = await harness.cli(["devices", "--until", "1", "--wait", "30"])
            let wrong = await harness.cli(["activate", "Secure TV", "--code", "0000"])
            #expect(wrong.status == .exited(1))
            #expect(wrong.error.contains("Secure TV refused the code 0000"))
            // No code on standard input (it is /dev/null) and no --code: pairing is cancelled.
            let unanswered = await harness.cli(["activate", "Secure TV"])
            #expect(unanswered.error.contains("no code on standard input; type it at a terminal, pipe it in, or pass --code"))
            #expect(unanswered.error.contains("pairing with Secure TV was cancelled"))
            let right = await harness.cli(["activate", "Secure TV", "--code", "4321"])
            #expect(right.status == .exited(0), "\(right.error) | daemon log: \(harness.log.suffix(1500))")
            #expect(right.output == "Secure TV is active through Test secure (s3)\n")
        }
    }

    /// A code of the wrong form would count as a wrong try at the device (three lock pairing): it is
    /// refused as a usage error, and the device never sees it.
    @Test func aCodeThatCannotBeWhatTheDeviceAsksIsNeverSent() async throws {
        try await DaemonHarness.run { harness in
            try harness.drivers.addDriver("org.test.secure", devices: ["Secure TV"])
            try await harness.start()
            _ = await harness.cli(["devices", "--until", "1", "--wait", "30"])
            for code in ["abcd", "12345"] {
                let typo = await harness.cli(["activate", "Secure TV", "--code", code])
                #expect(typo.status == .exited(64), "\(typo.error)")
                #expect(typo.error.contains("--code: Secure TV asks for a 4-digit code; \"\(code)\" is not 4 digits; nothing was sent to it"), "\(typo.error)")
            }
            #expect(!harness.log.contains("refused the code"))
            let right = await harness.cli(["activate", "Secure TV", "--code", "4321"])
            #expect(right.status == .exited(0), "\(right.error)")
        }
    }

    @Test func operatorStateSurvivesKill9AndDriversDieWithTheDaemon() async throws {
        try await DaemonHarness.run { harness in
            try harness.drivers.addDriver("org.test.keep", devices: ["Study Speaker"])
            try harness.drivers.addDriver("org.test.drop", devices: ["Garden Speaker"])
            try await harness.start()
            _ = await harness.cli(["devices", "--until", "1", "--wait", "30"])
            #expect(await harness.cli(["disable", "org.test.drop"]).output == "disabled org.test.drop\n")
            _ = await harness.cli(["activate", "Study Speaker"])
            let drivers = await harness.cli(["drivers", "--json"])
            let pid = drivers.json?.objectValue?["drivers"]?.arrayValue?.first { $0.objectValue?["protocol"] == "org.test.keep" }?.objectValue?["pid"]?.integerValue
            let driverPID = try #require(pid.map { Int32($0) })

            kill(try #require(harness.daemon).pid, SIGKILL)
            try await waitUntil("driver died with the daemon") { kill(driverPID, 0) != 0 }

            try await harness.start()
            let after = await harness.cli(["drivers", "--json"])
            let states = Dictionary(uniqueKeysWithValues: (after.json?.objectValue?["drivers"]?.arrayValue ?? []).compactMap { value -> (String, String)? in
                guard let object = value.objectValue, let id = object["protocol"]?.stringValue, let state = object["state"]?.stringValue else { return nil }
                return (id, state)
            })
            #expect(states == ["org.test.keep": "stopped", "org.test.drop": "disabled"])
        }
    }

    @Test func sigtermStopsEveryDriverAndRemovesTheSocket() async throws {
        try await DaemonHarness.run { harness in
            try harness.drivers.addDriver("org.test.one", devices: ["Office TV"])
            try await harness.start()
            _ = await harness.cli(["activate", "Office TV"]).status  // not in the picker yet: refused
            _ = await harness.cli(["devices", "--until", "1", "--wait", "30"])
            #expect(await harness.cli(["activate", "Office TV"]).status == .exited(0))
            let pid = try #require(await harness.cli(["drivers", "--json"]).json?.objectValue?["drivers"]?.arrayValue?.first?.objectValue?["pid"]?.integerValue)

            // The socket is private: its directory 0700, the socket 0600.
            var status = stat()
            stat((harness.socket as NSString).deletingLastPathComponent, &status)
            #expect(status.st_mode & 0o777 == 0o700)
            stat(harness.socket, &status)
            #expect(status.st_mode & 0o777 == 0o600)

            let daemon = try #require(harness.daemon)
            kill(daemon.pid, SIGTERM)
            #expect(await daemon.exitStatus() == .exited(0))
            #expect(kill(Int32(pid), 0) != 0)
            #expect(!FileManager.default.fileExists(atPath: harness.socket))
            #expect(harness.log.contains("signal 15: stopping every driver"))
            #expect(harness.log.contains("driver org.test.one stopped: the supervisor is shutting down"))
        }
    }
}

@Suite("The CLI at a terminal", .timeLimit(.minutes(2)))
struct InteractiveCLITests {
    /// Runs the CLI in a pseudo-terminal (Python's pty module), answers its prompt with Ctrl-C, and
    /// returns what the terminal showed and the exit status.
    private func atTerminal(_ harness: DaemonHarness, _ arguments: [String], after prompt: String) async throws -> (String, Int32) {
        let script = """
        import os, pty, sys, time, select, signal
        pid, fd = pty.fork()
        if pid == 0:
            os.execv(sys.argv[1], sys.argv[1:-1])
        def read_until(deadline, marker=None):
            global seen
            while time.time() < deadline and (marker is None or marker not in seen):
                if not select.select([fd], [], [], 0.2)[0]: continue
                try:
                    chunk = os.read(fd, 4096)
                except OSError:
                    return
                if not chunk: return
                seen += chunk
        seen = b""
        read_until(time.time() + 30, sys.argv[-1].encode())
        if sys.argv[-1].encode() not in seen:
            os.kill(pid, signal.SIGKILL)
            sys.stdout.write("NO PROMPT WITHIN 30 s: " + seen.decode(errors="replace"))
            sys.exit(3)
        os.write(fd, b"\\x03")
        read_until(time.time() + 10)
        for _ in range(100):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done: break
            time.sleep(0.1)
        else:
            os.kill(pid, signal.SIGKILL)
            sys.stdout.write("STILL RUNNING 10 s AFTER CTRL-C: " + seen.decode(errors="replace"))
            sys.exit(4)
        sys.stdout.write(seen.decode(errors="replace"))
        sys.exit(os.waitstatus_to_exitcode(status) & 0xff)
        """
        let path = harness.drivers.root + "/at-terminal.py"
        try script.write(toFile: path, atomically: true, encoding: .utf8)
        let out = open(harness.drivers.root + "/pty.out", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        let python = try ChildProcess(executable: "/usr/bin/python3",
                                      arguments: [path, DaemonHarness.binary("mediaroute"), "--socket", harness.socket] + arguments + [prompt],
                                      standardOutput: out, standardError: out)
        close(out)
        let status = await python.exitStatus()
        guard case .exited(let code) = status else { return ("", -1) }
        return ((try? String(contentsOfFile: harness.drivers.root + "/pty.out", encoding: .utf8)) ?? "", code)
    }

    @Test func ctrlCAtThePairingPromptCancelsThePairing() async throws {
        try await DaemonHarness.run { harness in
            try harness.drivers.addDriver("org.test.secure", devices: ["Secure Projector"])
            try await harness.start()
            _ = await harness.cli(["devices", "--until", "1", "--wait", "10"])
            // The driver's reason is the prompt's explanation, once; the prompt names the device and the
            // code length. Ctrl-C answers "cancelled" to the driver.
            let (screen, status) = try await atTerminal(harness, ["activate", "Secure Projector"], after: "(Ctrl-C cancels): ")
            #expect(screen.contains("Enter the code shown on the screen."), "\(screen)")
            #expect(screen.contains("4-digit code for Secure Projector (Ctrl-C cancels): "), "\(screen)")
            #expect(screen.components(separatedBy: "Enter the").count == 2, "the request is read once: \(screen)")
            #expect(screen.contains("pairing cancelled"))
            #expect(screen.contains("pairing with Secure Projector was cancelled"))
            #expect(status == 1)
            #expect(await harness.cli(["sessions"]).output == "no active routes\n")
        }
    }

    @Test func devicesWatchFollowsThePickerUntilCtrlC() async throws {
        try await DaemonHarness.run { harness in
            try harness.drivers.addDriver("org.test.watch", devices: ["Den Speaker"])
            try await harness.start()
            let (screen, status) = try await atTerminal(harness, ["devices", "--watch"], after: "Den Speaker")
            #expect(screen.contains("Den Speaker"), "\(screen)")
            #expect(status == 0)
        }
    }
}

@Suite("The control socket's peer check", .timeLimit(.minutes(1)))
struct PeerCredentialTests {
    /// With the file-system permissions opened up, a process of another user still gets nothing:
    /// the daemon checks SO_PEERCRED and drops the connection before the handshake.
    @Test func anotherUserIsRefusedEvenWhenTheSocketIsReachable() async throws {
        try await DaemonHarness.run { harness in
            try harness.drivers.addDriver("org.test.private", devices: ["Vault TV"])
            try await harness.start()
            chmod(harness.drivers.root, 0o755)
            chmod((harness.socket as NSString).deletingLastPathComponent, 0o755)
            chmod(harness.socket, 0o666)
            let out = open(harness.drivers.root + "/nobody.out", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            let nobody = try ChildProcess(executable: "/usr/bin/setpriv",
                                          arguments: ["--reuid=65534", "--regid=65534", "--clear-groups", DaemonHarness.binary("mediaroute"),
                                                      "--socket", harness.socket, "drivers"],
                                          standardOutput: out, standardError: out)
            close(out)
            let status = await nobody.exitStatus()
            let said = (try? String(contentsOfFile: harness.drivers.root + "/nobody.out", encoding: .utf8)) ?? ""
            #expect(status == .exited(1), "\(said)")
            #expect(said.contains("did not accept the connection"), "\(said)")
            try await waitUntil("refusal logged") { harness.log.contains("refused a connection from uid 65534") }
            // The owner still gets in.
            #expect(await harness.cli(["drivers"]).status == .exited(0))
        }
    }
}
