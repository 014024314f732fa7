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

    @Test("a driver failed: crashing past its budget is a problem with its last exit and `mediaroute enable`")
    func driverFailed() async throws {
        try await DaemonHarness.run { harness in
            try harness.drivers.addDriver("org.test.crashing", flags: ["--crash-on-start"],
                                          restart: ["intensity": 1, "periodSeconds": 60, "initialBackoffMilliseconds": 20, "maximumBackoffMilliseconds": 20])
            try harness.drivers.addDriver("org.test.fine", devices: ["Fine TV"])
            try await harness.start()
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
            }
        }
    }

    @Test("no multicast: an interface without MULTICAST is a problem; no route to the groups a warning")
    func noMulticast() async throws {
        try await DaemonHarness.run { harness in
            try await DoctorNamespace.with(multicast: false) { namespace in
                let run = try await doctor(["--wait", "1"], in: namespace, socket: harness.socket, bus: Self.noBus(harness))
                #expect(run.termination == .exited(1), "\(run)")
                #expect(run.of("multicast", "doc0").first?.verdict == "warning", "\(run)")
                let none = try #require(run.of("multicast", "interfaces").first, "\(run)")
                #expect(none.verdict == "problem")
                #expect(none.finding.hasPrefix("no network interface is up with MULTICAST and an IPv4 address"))
                #expect(run.of("multicast", "224.0.0.251").first?.finding.contains("leaves by doc0, which cannot multicast") == true, "\(run)")
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
                #expect(rule.finding.hasSuffix("in chain input of table inet doctortest (nftables) drops UDP 5353 (mDNS)"), "\(rule.finding)")
                #expect(rule.fix?.hasPrefix("remove it (`nft delete rule inet doctortest input handle ") == true, "\(rule.fix ?? "")")
                let policy = try #require(drops.first { $0.subject == "chain output of table inet doctortest (nftables)" }, "\(run)")
                #expect(policy.finding == "chain output of table inet doctortest (nftables) drops UDP 5353 (mDNS) by its policy: no rule accepts it")
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
                try await harness.start()
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
}
