import Foundation
import MediaRouteIPC
import PrivateDaemons
import TestSupport
import Testing

/// `mediaroute doctor`, each diagnosis staged for real: the doctor runs in a network namespace the
/// test made (its interface, routes and firewall), against a real mediarouted and, where Avahi
/// matters, a private avahi-daemon on a private bus.
@Suite("mediaroute doctor", .timeLimit(.minutes(2)))
struct DoctorTests {
    /// A bus address nothing listens on: the doctor never reaches the machine's own system bus.
    static func noBus(_ harness: DaemonHarness) -> String { "unix:path=\(harness.drivers.root)/no-bus.sock" }

    @Test("all good: daemon, driver, Avahi, multicast and firewall ok, the device in the picker; exit 0")
    func allGood() async throws {
        let avahi = try await PrivateAvahi()
        try await withTearDown {
            try await DaemonHarness.run { harness in
                try harness.drivers.addDriver("org.test.doctor", devices: ["Doctor TV"])
                try await harness.start()
                try await DoctorNamespace.with { namespace in
                    let run = try await doctor(["Doctor TV", "--wait", "2"], in: namespace, socket: harness.socket, bus: avahi.busAddress)
                    #expect(run.termination == .exited(0), "\(run)")
                    #expect(run.verdict == "ok", "\(run)")
                    #expect(run.findings.allSatisfy { $0.verdict == "ok" }, "\(run)")
                    #expect(Set(run.findings.map(\.check)) == ["daemon", "drivers", "avahi", "multicast", "firewall", "device"], "\(run)")
                    #expect(run.of("device").first?.finding.contains("is in the picker, through Test doctor") == true, "\(run)")
                    #expect(run.of("multicast", "doc0").first?.verdict == "ok", "\(run)")
                    #expect(run.of("multicast", "239.255.255.250").first?.finding == "multicast to 239.255.255.250 (SSDP) leaves by doc0", "\(run)")
                }
            }
        } tearDown: { await avahi.stop() }
    }

    @Test("Avahi stopped: a problem saying the daemon is not running, until it runs again")
    func avahiStopped() async throws {
        let avahi = try await PrivateAvahi()
        try await withTearDown {
            try await DaemonHarness.run { harness in
                try await harness.start()
                try await DoctorNamespace.with { namespace in
                    let before = try await doctor(["--wait", "1"], in: namespace, socket: harness.socket, bus: avahi.busAddress)
                    #expect(before.of("avahi").first?.verdict == "ok", "\(before)")

                    await avahi.stopDaemon()
                    let stopped = try await doctor(["--wait", "1"], in: namespace, socket: harness.socket, bus: avahi.busAddress)
                    #expect(stopped.termination == .exited(1), "\(stopped)")
                    let finding = try #require(stopped.of("avahi").first, "\(stopped)")
                    #expect(finding.verdict == "problem")
                    #expect(finding.finding == "the reference and AirPlay drivers cannot browse: the Avahi daemon is not running (nothing owns org.freedesktop.Avahi on the system bus)")
                    #expect(finding.fix?.contains("systemctl start avahi-daemon") == true)

                    try await avahi.startDaemon()
                    let again = try await doctor(["--wait", "1"], in: namespace, socket: harness.socket, bus: avahi.busAddress)
                    #expect(again.of("avahi").first?.verdict == "ok", "\(again)")
                }
            }
        } tearDown: { await avahi.stop() }
    }

    @Test("a driver failed: crashing past its budget is a problem with its last exit and `mediaroute enable`; one the configuration file disables, a warning saying so")
    func driverFailed() async throws {
        try await DaemonHarness.run { harness in
            try harness.drivers.addDriver("org.test.crashing", flags: ["--crash-on-start"],
                                          restart: ["intensity": 1, "periodSeconds": 60, "initialBackoffMilliseconds": 20, "maximumBackoffMilliseconds": 20])
            try harness.drivers.addDriver("org.test.fine", devices: ["Fine TV"])
            try harness.drivers.addDriver("org.test.off", devices: ["Off TV"])
            let config = harness.drivers.root + "/mediarouted.yaml"
            try "drivers:\n  org.test.off: {enabled: false}\n".write(toFile: config, atomically: true, encoding: .utf8)
            try await harness.start(["--config", config])
            _ = await harness.cli(["devices", "--wait", "0.5"])  // starts the drivers
            try await waitUntil("org.test.crashing failed") {
                let drivers = await harness.cli(["drivers", "--json"]).json?.objectValue?["drivers"]?.arrayValue ?? []
                return drivers.contains { $0.objectValue?["protocol"]?.stringValue == "org.test.crashing" && $0.objectValue?["state"]?.stringValue?.hasPrefix("failed") == true }
            }
            try await DoctorNamespace.with { namespace in
                let run = try await doctor(["--wait", "1"], in: namespace, socket: harness.socket, bus: Self.noBus(harness))
                #expect(run.termination == .exited(1), "\(run)")
                let crashing = try #require(run.of("drivers", "org.test.crashing").first, "\(run)")
                #expect(crashing.verdict == "problem")
                #expect(crashing.finding.hasPrefix("org.test.crashing (Test crashing) is failed: "), "\(crashing.finding)")
                #expect(crashing.finding.contains("; it last ended: "), "\(crashing.finding)")
                #expect(crashing.fix?.hasPrefix("it stays down until `mediaroute enable org.test.crashing`") == true)
                #expect(run.of("drivers", "org.test.fine").first?.verdict == "ok", "\(run)")
                let off = try #require(run.of("drivers", "org.test.off").first, "\(run)")
                #expect(off.verdict == "warning", "\(run)")
                #expect(off.finding == "org.test.off (Test off) is disabled in the configuration file (`enabled: false`): its devices are not listed")
                #expect(off.fix?.hasPrefix("set `enabled: true` for org.test.off in the configuration file") == true, "\(off.fix ?? "")")
                #expect(off.fix?.contains("`systemctl reload mediarouted` or SIGHUP") == true, "\(off.fix ?? "")")
                #expect(off.fix?.contains("mediaroute enable") == false, "`enable` is refused for it")
            }
        }
    }

    @Test("no multicast: an interface without MULTICAST, or up without a carrier, is a problem; no route to the groups a warning")
    func noMulticast() async throws {
        try await DaemonHarness.run { harness in
            try await DoctorNamespace.with(multicast: false) { namespace in
                let run = try await doctor(["--wait", "1"], in: namespace, socket: harness.socket, bus: Self.noBus(harness))
                #expect(run.termination == .exited(1), "\(run)")
                #expect(run.of("multicast", "doc0").first?.verdict == "warning", "\(run)")
                let none = try #require(run.of("multicast", "interfaces").first, "\(run)")
                #expect(none.verdict == "problem")
                #expect(none.finding.hasPrefix("no network interface is up with a carrier, MULTICAST and an IPv4 address"))
                #expect(run.of("multicast", "224.0.0.251").first?.finding.contains("leaves by doc0, which cannot multicast") == true, "\(run)")
            }
            // doc0 up, its peer down: NO-CARRIER, no LOWER_UP; nothing goes through it.
            try await DoctorNamespace.with(carrier: false) { namespace in
                let run = try await doctor(["--wait", "1"], in: namespace, socket: harness.socket, bus: Self.noBus(harness))
                #expect(run.termination == .exited(1), "\(run)")
                let doc0 = try #require(run.of("multicast", "doc0").first, "\(run)")
                #expect(doc0.verdict == "warning")
                #expect(doc0.finding.hasPrefix("doc0 (10.232.") && doc0.finding.hasSuffix("is up but has no carrier (no LOWER_UP): its link is down, nothing is sent or heard through it"),
                        "\(doc0.finding)")
                #expect(run.of("multicast", "interfaces").first?.verdict == "problem", "\(run)")
                #expect(run.of("multicast", "224.0.0.251").first?.finding.contains("leaves by doc0, which has no carrier") == true, "\(run)")
            }
            try await DoctorNamespace.with(route: false) { namespace in
                let run = try await doctor(["--wait", "1"], in: namespace, socket: harness.socket, bus: Self.noBus(harness))
                #expect(run.of("multicast", "doc0").first?.verdict == "ok", "\(run)")
                #expect(run.of("multicast", "interfaces").isEmpty, "\(run)")
                for group in ["224.0.0.251", "239.255.255.250"] {
                    let route = try #require(run.of("multicast", group).first, "\(run)")
                    #expect(route.verdict == "warning")
                    #expect(route.finding.hasPrefix("no route covers \(group)"), "\(route.finding)")
                    #expect(route.finding.contains("Network is unreachable"), "\(route.finding)")
                    #expect(route.fix == "`ip route add 224.0.0.0/4 dev doc0` (the interface of the devices' network)")
                }
            }
        }
    }

    @Test("a drop rule in the namespace: the rule and how to remove it; a drop policy; the ruleset left as it was")
    func dropRule() async throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/sbin/nft") else {
            Issue.record("nft is missing (apt-get install nftables, listed in .ci/apt-packages)")
            return
        }
        try await DaemonHarness.run { harness in
            try await DoctorNamespace.with { namespace in
                let clean = try await doctor(["--wait", "1"], in: namespace, socket: harness.socket, bus: Self.noBus(harness))
                #expect(clean.of("firewall").map(\.verdict) == ["ok"], "\(clean)")

                for command in ["add table inet doctortest",
                                "add chain inet doctortest input { type filter hook input priority 0 ; policy accept ; }",
                                "add rule inet doctortest input ct state established accept",
                                "add rule inet doctortest input udp dport 5353 drop",
                                "add chain inet doctortest output { type filter hook output priority 0 ; policy drop ; }",
                                "add rule inet doctortest output udp dport 1900 accept"] {
                    let output = try await namespace.run(["/usr/sbin/nft", command])
                    try #require(output.termination == .exited(0), "nft \(command): \(output.standardError)")
                }
                let before = try await namespace.run(["/usr/sbin/nft", "-j", "list", "ruleset"]).standardOutput
                let run = try await doctor(["--wait", "1"], in: namespace, socket: harness.socket, bus: Self.noBus(harness))
                #expect(run.termination == .exited(1), "\(run)")
                let drops = run.of("firewall")
                #expect(drops.count == 2, "\(run)")
                let rule = try #require(drops.first { $0.subject == "chain input of table inet doctortest (nftables)" }, "\(run)")
                #expect(rule.verdict == "problem")
                #expect(rule.finding.hasPrefix("\"udp dport 5353 drop\" (handle "), "\(rule.finding)")
                #expect(rule.finding.hasSuffix("in chain input of table inet doctortest (nftables) drops UDP to port 5353 (mDNS queries and announcements, multicast)"),
                        "\(rule.finding)")
                #expect(rule.fix?.hasPrefix("remove it (`nft delete rule inet doctortest input handle ") == true, "\(rule.fix ?? "")")
                let policy = try #require(drops.first { $0.subject == "chain output of table inet doctortest (nftables)" }, "\(run)")
                #expect(policy.finding == "chain output of table inet doctortest (nftables) drops UDP sent to port 5353 (our mDNS queries) by its policy: no rule accepts it")
                #expect(policy.fix == "accept it in that chain: `udp dport 5353 accept`")
                #expect(!drops.contains { $0.finding.contains("1900") }, "\(run)")
                let after = try await namespace.run(["/usr/sbin/nft", "-j", "list", "ruleset"]).standardOutput
                #expect(after == before, "the doctor changed the ruleset")
            }
        }
    }

    @Test("a device heard on the network but not listed: refused by its driver (its log line), then its driver disabled")
    func deviceRefused() async throws {
        let avahi = try await PrivateAvahi()
        try await withTearDown {
            try await DaemonHarness.run { harness in
                let manifest: JSONValue = [
                    "protocol": "org.mediaroute.airplay",
                    "exportedType": ["identifier": "org.mediaroute.airplay", "conformsTo": ["public.media-sharing-protocol"], "description": "AirPlay"],
                    "executable": .string(Executables.sibling("mediaroute-airplay-driver")),
                    "environment": ["DBUS_SYSTEM_BUS_ADDRESS": .string(avahi.busAddress), "SWIFT_BACKTRACE": "enable=no"],
                ]
                try Data(JSONWriter.encode(manifest)).write(to: URL(fileURLWithPath: harness.drivers.drivers + "/airplay.json"))
                let config = harness.drivers.root + "/mediarouted.yaml"
                try "".write(toFile: config, atomically: true, encoding: .utf8)
                try await harness.start(["--config", config])
                // An AirPlay 2-only receiver (encryption type 4 alone), announced through the private Avahi.
                let announcement = harness.drivers.root + "/publish.out"
                let out = open(announcement, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
                defer { close(out) }
                let publisher = try ChildProcess(executable: "/usr/bin/avahi-publish",
                                                 arguments: ["-s", "0A1B2C3D4E5F@Doctor Speaker", "_raop._tcp", "5000", "et=4", "cn=0,1", "tp=UDP"],
                                                 environment: (ProcessInfo.processInfo.environment.merging(avahi.environment) { $1 }).map { "\($0.key)=\($0.value)" },
                                                 standardOutput: out, standardError: out)
                try await withTearDown {
                    try await waitUntil("the receiver announced") {
                        ((try? String(contentsOfFile: announcement, encoding: .utf8)) ?? "").contains("Established under name")
                    }
                    _ = await harness.cli(["devices", "--wait", "0.5"])  // the driver starts, hears it, and refuses it
                    try await waitUntil("the AirPlay driver refused the receiver") { harness.log.contains("not listing \"0A1B2C3D4E5F@Doctor Speaker\"") }
                    try await DoctorNamespace.with { namespace in
                        let refused = try await doctor(["Doctor Speaker", "--wait", "1.5"], in: namespace, socket: harness.socket, bus: avahi.busAddress)
                        #expect(refused.termination == .exited(1), "\(refused)")
                        let finding = try #require(refused.of("device").first, "\(refused)")
                        #expect(finding.verdict == "problem")
                        #expect(finding.finding.hasPrefix("Doctor Speaker is heard on the network but not in the picker: its driver org.mediaroute.airplay refused it: "),
                                "\(finding.finding)")
                        #expect(finding.finding.contains("Doctor Speaker speaks AirPlay 2 only (encryption types 4): MediaRoute streams AirPlay 1"), "\(finding.finding)")
                        #expect(finding.details.first?.hasPrefix("DNS-SD _raop._tcp \"0A1B2C3D4E5F@Doctor Speaker\" at 127.0.0.1:5000") == true, "\(finding.details)")

                        #expect(await harness.cli(["disable", "org.mediaroute.airplay"]).status == .exited(0))
                        let disabled = try await doctor(["doctor speaker", "--wait", "1"], in: namespace, socket: harness.socket, bus: avahi.busAddress)
                        let again = try #require(disabled.of("device").first, "\(disabled)")
                        #expect(again.verdict == "problem")
                        #expect(again.finding == "doctor speaker is heard on the network but not in the picker: its driver org.mediaroute.airplay is disabled")
                        #expect(again.fix == "`mediaroute enable org.mediaroute.airplay`")
                        #expect(disabled.of("drivers", "org.mediaroute.airplay").first?.verdict == "warning", "\(disabled)")

                        // The configuration file (re-read on SIGHUP) disables it too: `enable` would be refused.
                        try "drivers:\n  org.mediaroute.airplay: {enabled: false}\n".write(toFile: config, atomically: true, encoding: .utf8)
                        kill(try #require(harness.daemon).pid, SIGHUP)
                        try await waitUntil("the configuration file disables the AirPlay driver") {
                            let drivers = await harness.cli(["drivers", "--json"]).json?.objectValue?["drivers"]?.arrayValue ?? []
                            return drivers.contains { $0.objectValue?["state"]?.stringValue == "disabled in the configuration file" }
                        }
                        let configured = try await doctor(["Doctor Speaker", "--wait", "1"], in: namespace, socket: harness.socket, bus: avahi.busAddress)
                        let off = try #require(configured.of("device").first, "\(configured)")
                        #expect(off.verdict == "problem")
                        #expect(off.finding == "Doctor Speaker is heard on the network but not in the picker: its driver org.mediaroute.airplay is disabled in the configuration file",
                                "\(configured)")
                        #expect(off.fix?.hasPrefix("set `enabled: true` for org.mediaroute.airplay in the configuration file") == true, "\(off.fix ?? "")")
                        #expect(configured.of("drivers", "org.mediaroute.airplay").first?.verdict == "warning", "\(configured)")
                    }
                } tearDown: {
                    await publisher.terminate(grace: .seconds(5))
                }
            }
        } tearDown: { await avahi.stop() }
    }

    @Test("a bad argument exits 64; no daemon is a problem naming where the socket was looked for")
    func badArgumentAndNoDaemon() async throws {
        try await DaemonHarness.run { harness in
            let bad = await harness.cli(["doctor", "--wait", "0"])
            #expect(bad.status == .exited(64), "\(bad.error)")
            try await DoctorNamespace.with { namespace in
                let run = try await doctor(["--wait", "1"], in: namespace, socket: harness.socket, bus: Self.noBus(harness))
                #expect(run.termination == .exited(1), "\(run)")
                let daemon = try #require(run.of("daemon").first, "\(run)")
                #expect(daemon.verdict == "problem")
                #expect(daemon.finding.hasPrefix("mediarouted does not answer: nothing listens on \(harness.socket) ("), "\(daemon.finding)")
                #expect(daemon.fix?.contains("$MEDIAROUTE_SOCKET") == true)
                #expect(run.of("drivers").isEmpty)
            }
        }
    }

    @Test("as a user: the daemon's socket closed to them is permission denied; their own socket absent beside the system daemon's, how to reach that")
    func asAUser() async throws {
        try await DaemonHarness.run { harness in
            try await harness.start()
            // The system daemon's runtime directory is root's, 0700 (its unit's RuntimeDirectoryMode).
            let run = (harness.socket as NSString).deletingLastPathComponent
            chmod(run, 0o700)
            try await DoctorNamespace.with { namespace in
                let denied = try await doctorAsUser(["--socket", "/run/mediaroute/mediarouted.sock", "doctor", "--wait", "1"], in: namespace,
                                                    systemRun: run, bus: Self.noBus(harness))
                #expect(denied.termination == .exited(1), "\(denied)")
                let closed = try #require(denied.of("daemon").first, "\(denied)")
                #expect(closed.verdict == "problem")
                #expect(closed.finding.hasPrefix("mediarouted's socket /run/mediaroute/mediarouted.sock is closed to this user (uid 65534): permission denied"),
                        "\(closed.finding)")
                #expect(closed.fix == "run it with sudo (`sudo mediaroute doctor`), or as the user the daemon runs as")

                let own = try await doctorAsUser(["doctor", "--wait", "1"], in: namespace, systemRun: run, bus: Self.noBus(harness))
                #expect(own.termination == .exited(1), "\(own)")
                let system = try #require(own.of("daemon").first, "\(own)")
                #expect(system.verdict == "problem")
                #expect(system.finding == "nothing listens on /run/user/65534/mediaroute/mediarouted.sock, this user's socket; the system daemon runs: "
                                          + "its runtime directory /run/mediaroute exists (closed to this user)", "\(system.finding)")
                #expect(system.fix?.contains("`sudo mediaroute doctor`") == true, "\(system.fix ?? "")")
                #expect(system.fix?.contains("`mediaroute --socket /run/mediaroute/mediarouted.sock doctor`") == true, "\(system.fix ?? "")")
            }
        }
    }

    @Test("firewall: all multicast dropped by packet type; replies dropped where only queries are accepted; a ruleset over 1 MiB read whole")
    func firewallPackets() async throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/sbin/nft") else {
            Issue.record("nft is missing (apt-get install nftables, listed in .ci/apt-packages)")
            return
        }
        try await DaemonHarness.run { harness in
            try await DoctorNamespace.with { namespace in
                func stage(_ ruleset: String) async throws {
                    let file = harness.drivers.root + "/ruleset.nft"
                    try ("flush ruleset\n" + ruleset).write(toFile: file, atomically: true, encoding: .utf8)
                    let output = try await namespace.run(["/usr/sbin/nft", "-f", file])
                    try #require(output.termination == .exited(0), "nft -f: \(output.standardError)")
                }
                func input(_ policy: String, _ rules: String) -> String {
                    "table inet doctortest {\n chain input { type filter hook input priority 0 ; policy \(policy) ;\n \(rules)\n }\n}\n"
                }

                // Every multicast packet dropped: mDNS and SSDP queries and announcements, not the unicast replies.
                try await stage(input("accept", "meta pkttype multicast drop"))
                let multicast = try await doctor(["--wait", "1"], in: namespace, socket: harness.socket, bus: Self.noBus(harness))
                let dropped = multicast.of("firewall").map(\.finding)
                #expect(dropped.count == 2, "\(multicast)")
                for what in ["UDP to port 5353 (mDNS queries and announcements, multicast)", "UDP to port 1900 (SSDP announcements and searches, multicast)"] {
                    #expect(dropped.contains { $0.hasPrefix("\"meta pkttype multicast drop\" (handle ") && $0.hasSuffix("drops \(what)") }, "\(what): \(dropped)")
                }

                // Queries accepted by their destination port, the rest dropped: the replies to our M-SEARCH and mDNS queries come from the port.
                try await stage(input("drop", "ct state established,related accept\n udp dport { 1900, 5353 } accept"))
                let replies = try await doctor(["--wait", "1"], in: namespace, socket: harness.socket, bus: Self.noBus(harness))
                #expect(replies.termination == .exited(1), "\(replies)")
                #expect(Set(replies.of("firewall").map(\.finding)) == [
                    "chain input of table inet doctortest (nftables) drops UDP from port 5353 to an ephemeral port (unicast replies to our mDNS queries) by its policy: no rule accepts it",
                    "chain input of table inet doctortest (nftables) drops UDP from port 1900 to an ephemeral port (unicast replies to our M-SEARCH) by its policy: no rule accepts it",
                ], "\(replies)")
                #expect(replies.of("firewall").first?.fix == "accept it in that chain: `udp sport 5353 udp dport 32768-60999 accept`", "\(replies)")

                // A drop rule first, then thousands of rules: `nft -j list ruleset` prints more than 1 MiB, all of it read.
                var many = "table inet doctortest {\n chain input { type filter hook input priority 0 ; policy accept ;\n udp dport 1900 drop\n }\n}\n"
                many += "table inet doctorbulk {\n chain bulk {\n"
                for index in 0..<6000 { many += " ip saddr 10.\(index / 250).\(index % 250).1 counter accept\n" }
                many += " }\n}\n"
                try await stage(many)
                let listed = try await namespace.run(["/bin/sh", "-c", "/usr/sbin/nft -j list ruleset | wc -c"]).standardOutput
                try #require((Int(listed.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) > 1 << 20, "the staged ruleset lists \(listed) bytes")
                let large = try await doctor(["--wait", "1"], in: namespace, socket: harness.socket, bus: Self.noBus(harness))
                #expect(large.of("firewall").map(\.verdict) == ["problem"], "\(large)")
                #expect(large.of("firewall").first?.finding.hasPrefix("\"udp dport 1900 drop\" (handle ") == true, "\(large)")
            }
        }
    }
}
