import MediaRouteIPC
import MediaRouteWire

/// §4 (the driver's `hello`, judged by the rules the supervisor applies) and the heartbeat of §11.
struct HandshakeChecks {
    let setup: KitSetup
    let report: ConformanceReport
    let section = "§4 Handshake"

    /// The handshake itself happened in `DriverUnderTest.start`; this judges what the driver said.
    func run(on driver: DriverUnderTest) async {
        let hello = driver.peer
        await report.check(section, "version is 1 (\"The versions MUST be equal\")") {
            hello.version == 1 ? .pass : .fail("the driver announced version \(hello.version)")
        }
        await report.check(section, "role is \"driver\" on descriptor 3") {
            hello.role == .driver ? .pass : .fail("the driver announced role \"\(hello.role.rawValue)\"")
        }
        await report.check(section, "identity has a non-empty name and protocol equal to the manifest's (§11.2, Identity)") {
            let identity = try DriverIdentity(hello.identity)
            guard !identity.name.isEmpty else { return .fail("identity.name is empty") }
            guard identity.protocol == setup.manifest.protocolID else {
                return .fail("identity.protocol is \"\(identity.protocol)\", the manifest says \"\(setup.manifest.protocolID)\"")
            }
            if let pid = identity.pid, pid != driver.launch.pid {
                return .fail("identity.pid is \(pid) but the process is \(driver.launch.pid)")
            }
            return .pass("name \"\(identity.name)\", supportsSimultaneousSessions \(identity.supportsSimultaneousSessions ?? false), realtimeSampleHandling \(identity.realtimeSampleHandling ?? false)")
        }
        await report.check(section, "maxFrameLength is 4,096 … 4,294,967,295") {
            (Hello.minimumFrameLength...Int(UInt32.max)).contains(hello.maximumFrameLength) ? .pass("\(hello.maximumFrameLength)")
                : .fail("maxFrameLength \(hello.maximumFrameLength)")
        }
        await report.check(section, "features is an array of strings") {
            .pass(hello.features.isEmpty ? "none" : hello.features.joined(separator: ", "))
        }
        await report.check(section, "a second hello gets -32600 (\"hello happens once\")") {
            let params: JSONObject = ["version": 1, "role": "supervisor", "identity": ["name": "mediaroute-conformance"],
                                      "maxFrameLength": .integer(Int64(FrameDecoder.defaultMaximumFrameLength)), "features": []]
            do {
                let answer = try await driver.connection.request("hello", params, timeout: setup.requestTimeout)
                return .fail("the driver answered a second hello with a result: \(answer.result)")
            } catch let error as RPCError {
                return error.code == .invalidRequest ? .pass : .fail("answered with \(error)")
            }
        }
    }

    /// §11: `rpc.ping` is answered `{}` within the manifest's heartbeat timeout, every time.
    func heartbeats(on driver: DriverUnderTest, when: String) async {
        let timeout = setup.heartbeatTimeout
        await report.check("§11 Heartbeats", "\(when): rpc.ping is answered {} within heartbeatTimeoutMilliseconds (\(timeout)), 3 times") {
            var slowest = Duration.zero
            for _ in 0..<3 {
                let start = ContinuousClock.now
                let answer = try await driver.connection.request("rpc.ping", [:], timeout: timeout)
                slowest = max(slowest, ContinuousClock.now - start)
                guard answer.result.objectValue != nil else { return .fail("answered \(answer.result), not an object") }
            }
            return .pass("slowest answer \(slowest.milliseconds) ms")
        }
    }
}
