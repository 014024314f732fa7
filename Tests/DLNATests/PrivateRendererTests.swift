import Foundation
import Glibc
import MediaRouteIPC
import PrivateDaemons
import Testing

/// The DLNA tests' bed: private LANs in network namespaces, real gmediarender renderers on them,
/// found by SSDP and described over HTTP from the controller namespace, and nothing left behind.
@Suite("DLNA test bed: private network and gmediarender", .timeLimit(.minutes(2)))
struct PrivateRendererTests {
    static let mediaRenderer = "urn:schemas-upnp-org:device:MediaRenderer:1"

    @Test("A driver started through the controller prefix keeps its socket at fd 3 and its spawner as parent")
    func controllerPrefixKeepsTheDriverSocket() async throws {
        try await PrivateNetwork.withNetwork { network in
            let (ours, theirs) = try UnixSocket.pair()
            defer { close(ours) }
            let prefix = network.controllerCommandPrefix
            let script = #"echo "$PPID $(readlink /proc/self/fd/3) $(readlink /proc/self/ns/net)" >&3"#
            let child: ChildProcess
            do {
                child = try ChildProcess(executable: prefix[0], arguments: Array(prefix.dropFirst()) + ["/bin/sh", "-c", script], socket: theirs)
            } catch {
                close(theirs)
                throw error
            }
            close(theirs)
            #expect(await child.exitStatus() == .exited(0))
            let words = try await Self.readToEnd(ours, within: .seconds(5)).split(separator: " ").map(String.init)
            try #require(words.count == 3, "the child wrote \(words)")
            #expect(words[0] == String(getpid()), "the program's parent is the spawner: ip netns exec execs, it does not fork")
            #expect(words[1].hasPrefix("socket:"), "fd 3 is still the socket: \(words[1])")
            let controllerNet = try await network.run(["readlink", "/proc/self/ns/net"], in: network.controllerNamespace)
            #expect(words[2] == controllerNet.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines))
            #expect(words[2] != (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/ns/net")))
        }
    }

    @Test("Two renderers on two hosts answer an M-SEARCH from the controller and serve their descriptions; stop and kill leave nothing")
    func twoRenderersAnswerSearch() async throws {
        var namespaces: [String] = []
        try await PrivateNetwork.withNetwork { network in
            let (first, second) = (try await network.addHost(), try await network.addHost())
            namespaces = network.namespaces
            let began = ContinuousClock.now
            let livingRoom = try await PrivateRenderer.start(on: first, name: "Living Room")
            print("gmediarender ready (description served to the controller) in \(ContinuousClock.now - began)")
            let kitchen = try await PrivateRenderer.start(on: second, name: "Kitchen")

            let answers = try await Self.search(on: network, expecting: 2)
            print("M-SEARCH answers after \(answers.map(\.milliseconds)) ms")
            #expect(Set(answers.map(\.location)) == [livingRoom.descriptionURL, kitchen.descriptionURL], "answers: \(answers)")
            #expect(Set(answers.map(\.usn)) == [livingRoom.udn + "::" + Self.mediaRenderer, kitchen.udn + "::" + Self.mediaRenderer])

            for renderer in [livingRoom, kitchen] {
                let description = try await network.run(["curl", "-sS", "-m", "2", renderer.descriptionURL], in: network.controllerNamespace)
                #expect(description.termination == .exited(0), "\(description.standardError)")
                #expect(description.standardOutput.contains("<friendlyName>\(renderer.name)</friendlyName>"))
                #expect(description.standardOutput.contains("<UDN>\(renderer.udn)</UDN>"))
            }

            await livingRoom.stop()
            await kitchen.kill()
            for renderer in [livingRoom, kitchen] {
                #expect(Glibc.kill(renderer.pid, 0) == -1 && errno == ESRCH, "gmediarender \(renderer.pid) is gone")
                let left = try await ChildOutput.run("/usr/sbin/ip", ["netns", "pids", renderer.host.namespace], timeout: .seconds(5))
                #expect(left.standardOutput.isEmpty, "nothing runs in \(renderer.host.namespace): \(left.standardOutput)")
            }
        }
        #expect(namespaces.count == 3)
        #expect(try await Self.namespacesLeft(of: namespaces).isEmpty)
    }

    @Test("Namespaces left by a process that died before its teardown are swept, with what ran in them, by the next network",
          .timeLimit(.minutes(1)))
    func abandonedNamespacesAreSwept() async throws {
        // Its maker alive while a process enters it, so that no sweep (tests run side by side, and
        // any new network sweeps) can take the namespace while that process is still entering: one
        // opened and not yet joined is not among the namespace's PIDs and would outlive the deletion.
        let maker = try ChildProcess(executable: "/bin/sleep", arguments: ["600"])
        defer { if maker.exitIfEnded() == nil { maker.signal(SIGKILL) } }
        let name = "mediaroute-\(maker.pid)-1-lan"
        _ = try await ChildOutput.run("/usr/sbin/ip", ["netns", "add", name])
        let orphan = try ChildProcess(executable: "/usr/sbin/ip", arguments: ["netns", "exec", name, "/bin/sleep", "600"])
        defer { if orphan.exitIfEnded() == nil { orphan.signal(SIGKILL) } }
        let entering = ContinuousClock.now + .seconds(10)
        while try await !ChildOutput.run("/usr/sbin/ip", ["netns", "pids", name]).standardOutput.split(separator: "\n").contains("\(orphan.pid)") {
            guard ContinuousClock.now < entering, orphan.exitIfEnded() == nil else {
                Issue.record("the process never entered \(name)")
                _ = try? await ChildOutput.run("/usr/sbin/ip", ["netns", "delete", name])
                return
            }
            try await Task.sleep(for: .milliseconds(5))
        }
        // Now the maker dies (and is reaped): the namespace is abandoned, with what runs in it.
        maker.signal(SIGKILL)
        _ = await maker.exitStatus()
        // Any network made from now on sweeps it (ours, or another test's first).
        let network = try await PrivateNetwork.create()
        await network.destroy()
        #expect(!FileManager.default.fileExists(atPath: "/run/netns/" + name))
        // Killed inside by the sweep, long before its 600 s.
        let ending = ContinuousClock.now + .seconds(20)
        while orphan.exitIfEnded() == nil, ContinuousClock.now < ending { try await Task.sleep(for: .milliseconds(20)) }
        let ended = orphan.exitIfEnded()
        #expect(ended == .signalled(SIGKILL), "\(String(describing: ended))")
    }

    @Test("A renderer killed without a goodbye and restarted answers again with the same UDN")
    func killedRendererRestarts() async throws {
        try await PrivateNetwork.withNetwork { network in
            let renderer = try await PrivateRenderer.start(on: try await network.addHost(), name: "Bedroom")
            let firstPID = renderer.pid
            await renderer.kill()
            #expect(Glibc.kill(firstPID, 0) == -1 && errno == ESRCH)
            let began = ContinuousClock.now
            try await renderer.restart()
            print("gmediarender ready again after a kill in \(ContinuousClock.now - began)")
            #expect(renderer.pid != firstPID)
            let answers = try await Self.search(on: network, expecting: 1)
            #expect(answers.map(\.usn) == [renderer.udn + "::" + Self.mediaRenderer], "answers: \(answers); log:\n\(renderer.log)")
            #expect(answers.map(\.location) == [renderer.descriptionURL])
            await renderer.stop()
        }
    }

    @Test("A stopped renderer says goodbye (ssdp:byebye) on the LAN")
    func stopSaysGoodbye() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mediaroute-ssdp-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try await PrivateNetwork.withNetwork { network in
            let renderer = try await PrivateRenderer.start(on: try await network.addHost(), name: "Study")
            // Listens on the SSDP group from the controller namespace and prints every NOTIFY's NTS and USN.
            let listener = """
            import socket, struct
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(('', 1900))
            s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, struct.pack('4s4s', socket.inet_aton('239.255.255.250'), socket.inet_aton('\(network.controllerAddress)')))
            print('joined', flush=True)
            while True:
                lines = s.recv(8192).decode(errors='replace').split('\\r\\n')
                headers = {k.strip().upper(): v.strip() for k, _, v in (l.partition(':') for l in lines[1:]) if k}
                if lines[0].startswith('NOTIFY'):
                    print(headers.get('NTS'), headers.get('USN'), flush=True)
            """
            let prefix = network.controllerCommandPrefix
            let console = try ConsoleProcess(prefix[0], Array(prefix.dropFirst()) + ["/usr/bin/python3", "-c", listener],
                                             logPath: directory.appendingPathComponent("ssdp.log").path)
            try await withTearDown {
                try await console.waitFor("joined", seconds: 5)
                let began = ContinuousClock.now
                await renderer.stop()
                print("gmediarender stopped (SIGTERM to exit) in \(ContinuousClock.now - began)")
                try await console.waitFor("ssdp:byebye \(renderer.udn)::\(Self.mediaRenderer)", seconds: 5)
            } tearDown: {
                await console.stop(grace: .seconds(2))
            }
        }
    }

    @Test("A renderer that cannot start says why, with its log, and leaves no process")
    func failedStartLeavesNothing() async throws {
        try await PrivateNetwork.withNetwork { network in
            let host = try await network.addHost()
            let first = try await PrivateRenderer.start(on: host, name: "First", port: 49500)
            do {
                _ = try await PrivateRenderer.start(on: host, name: "Second", port: 49500)
                Issue.record("a second renderer started on a port already taken")
            } catch let error as PrivateDaemonError {
                #expect(error.description.contains("gmediarender \"Second\""), "\(error)")
                #expect(error.description.contains("its log:"), "\(error)")
                #expect(error.description.contains("port 49500"), "\(error)")
            }
            let left = try await ChildOutput.run("/usr/sbin/ip", ["netns", "pids", host.namespace], timeout: .seconds(5))
            #expect(left.standardOutput.split(separator: "\n") == [Substring(String(first.pid))], "only the first renderer runs")
            await first.stop()
        }
    }

    @Test("Destroying the network stops a renderer still running and deletes every namespace")
    func destroyLeavesNothing() async throws {
        let network = try await PrivateNetwork.create()
        let renderer: PrivateRenderer
        do {
            renderer = try await PrivateRenderer.start(on: try await network.addHost(), name: "Forgotten")
        } catch {
            await network.destroy()
            throw error
        }
        let namespaces = network.namespaces
        await network.destroy()
        #expect(Glibc.kill(renderer.pid, 0) == -1 && errno == ESRCH, "gmediarender \(renderer.pid) was stopped")
        #expect(try await Self.namespacesLeft(of: namespaces).isEmpty)
        await network.destroy()  // a second time does nothing
        await #expect(throws: PrivateDaemonError.self) { _ = try await network.addHost() }
    }

    /// One SSDP answer: when it came (after the first M-SEARCH), where the description is, the USN.
    struct SearchAnswer: Sendable, CustomStringConvertible {
        let milliseconds: Double
        let location: String
        let usn: String
        var description: String { "\(usn) at \(location) after \(milliseconds) ms" }
    }

    /// Multicasts an M-SEARCH for MediaRenderers from the controller namespace (again every 0.5 s, as
    /// UDP may lose one) until `count` devices answered or 5 s passed.
    static func search(on network: PrivateNetwork, expecting count: Int) async throws -> [SearchAnswer] {
        let probe = """
        import socket, sys, time
        want, st = int(sys.argv[1]), sys.argv[2]
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 2)
        query = ('M-SEARCH * HTTP/1.1\\r\\nHOST: 239.255.255.250:1900\\r\\nMAN: "ssdp:discover"\\r\\nMX: 1\\r\\nST: %s\\r\\n\\r\\n' % st).encode()
        start = time.monotonic(); end = start + 5; resend = start; seen = set()
        while len(seen) < want and time.monotonic() < end:
            if time.monotonic() >= resend:
                s.sendto(query, ('239.255.255.250', 1900)); resend = time.monotonic() + 0.5
            s.settimeout(max(0.005, min(resend, end) - time.monotonic()))
            try:
                data = s.recv(8192)
            except socket.timeout:
                continue
            lines = data.decode(errors='replace').split('\\r\\n')[1:]
            headers = {k.strip().upper(): v.strip() for k, _, v in (l.partition(':') for l in lines) if k}
            if headers.get('ST') == st and headers.get('USN') not in seen:
                seen.add(headers.get('USN'))
                print('%.1f\\t%s\\t%s' % ((time.monotonic() - start) * 1000, headers.get('LOCATION'), headers.get('USN')), flush=True)
        """
        // Debian's own python3: the first one on PATH may be another.
        let output = try await network.run(["/usr/bin/python3", "-c", probe, String(count), mediaRenderer], in: network.controllerNamespace)
        try #require(output.termination == .exited(0), "the M-SEARCH probe \(output.termination): \(output.standardError)")
        let answers = output.standardOutput.split(separator: "\n").compactMap { line -> SearchAnswer? in
            let fields = line.split(separator: "\t").map(String.init)
            guard fields.count == 3, let milliseconds = Double(fields[0]) else { return nil }
            return SearchAnswer(milliseconds: milliseconds, location: fields[1], usn: fields[2])
        }
        try #require(answers.count == count, "expected \(count) renderers to answer an M-SEARCH, got: \(answers)")
        return answers
    }

    /// Which of `namespaces` `ip netns list` still shows.
    static func namespacesLeft(of namespaces: [String]) async throws -> [String] {
        let list = try await ChildOutput.run("/usr/sbin/ip", ["netns", "list"], timeout: .seconds(5))
        let present = Set(list.standardOutput.split(separator: "\n").compactMap { $0.split(separator: " ").first.map(String.init) })
        return namespaces.filter(present.contains)
    }

    /// Reads `fd` until its other end is closed, at most `timeout`.
    static func readToEnd(_ fd: Int32, within timeout: Duration) async throws -> String {
        try await onThreadOfItsOwn {
            let deadline = ContinuousClock.now + timeout
            var collected: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 1024)
            while ContinuousClock.now < deadline {
                var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&ready, 1, 50) > 0 else { continue }
                let count = read(fd, &buffer, buffer.count)
                guard count > 0 else { break }
                collected += buffer[0..<count]
            }
            return String(decoding: collected, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        }
    }
}
