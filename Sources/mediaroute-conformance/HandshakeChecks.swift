import Glibc
import MediaRouteIPC
import MediaRouteWire

/// §4 (the driver's `hello`, judged by the rules the supervisor applies) and the heartbeat of §11.
struct HandshakeChecks {
    let setup: KitSetup
    let report: ConformanceReport
    let section = "§4 Handshake"

    /// §4 judged on what the driver sent, not on what our connection made of it: `Connection.open`
    /// refuses a hello whose version, role, maxFrameLength or features are wrong before the kit
    /// sees it, so these checks read the hello of a fresh driver raw (left unanswered; the driver
    /// is then stopped) and judge its JSON. They run whether or not the handshake of the driver
    /// under test succeeded, so a bad hello is named, not only a failed handshake.
    func helloAsSent() async {
        let sent: Result<(params: JSONObject, pid: pid_t), any Error>
        do {
            sent = .success(try await RawDriverChannel.with(setup) { channel in
                let first = await channel.read(within: .seconds(5))
                guard case .message(.request(_, "hello", let params, _)) = first else {
                    throw KitError("the driver's first message was \(first), not a hello request")
                }
                return (params ?? [:], channel.launch.pid)
            })
        } catch {
            sent = .failure(error)
        }
        func judge(_ clause: String, _ verdict: (JSONObject, pid_t) throws -> Verdict) async {
            await report.check(section, clause) {
                let (params, pid) = try sent.get()
                return try verdict(params, pid)
            }
        }
        await judge("version is 1 (\"The versions MUST be equal\")") { hello, _ in
            hello["version"]?.integerValue == 1 ? .pass : .fail("the driver announced version \(Self.shown(hello["version"]))")
        }
        await judge("role is \"driver\" on descriptor 3") { hello, _ in
            hello["role"] == .string("driver") ? .pass : .fail("the driver announced role \(Self.shown(hello["role"]))")
        }
        await judge("identity has a non-empty name and protocol equal to the manifest's (§11.2, Identity)") { hello, pid in
            guard let object = hello["identity"]?.objectValue else { return .fail("identity is \(Self.shown(hello["identity"])), not an object") }
            let identity = try DriverIdentity(object)
            guard !identity.name.isEmpty else { return .fail("identity.name is empty") }
            guard identity.protocol == setup.manifest.protocolID else {
                return .fail("identity.protocol is \"\(identity.protocol)\", the manifest says \"\(setup.manifest.protocolID)\"")
            }
            if let announced = identity.pid, announced != pid {
                return .fail("identity.pid is \(announced) but the process is \(pid)")
            }
            return .pass("name \"\(identity.name)\", supportsSimultaneousSessions \(identity.supportsSimultaneousSessions ?? false), realtimeSampleHandling \(identity.realtimeSampleHandling ?? false)")
        }
        await judge("maxFrameLength is an integer from 4,096 to 4,294,967,295") { hello, _ in
            guard let maximum = hello["maxFrameLength"]?.integerValue, (Int64(Hello.minimumFrameLength)...Int64(UInt32.max)).contains(maximum) else {
                return .fail("maxFrameLength is \(Self.shown(hello["maxFrameLength"]))")
            }
            return .pass("\(maximum)")
        }
        await judge("features is an array of strings (absent: none)") { hello, _ in
            switch hello["features"] {
            case nil: return .pass("absent")
            case .array(let values)? where values.allSatisfy({ $0.stringValue != nil }):
                return .pass(values.isEmpty ? "none" : values.compactMap(\.stringValue).joined(separator: ", "))
            case let other?: return .fail("features is \(Self.shown(other))")
            }
        }
    }

    /// A JSON value as the driver sent it, for a sentence.
    private static func shown(_ value: JSONValue?) -> String {
        guard let value else { return "absent" }
        return String(decoding: JSONWriter.encode(value), as: UTF8.self)
    }

    /// What needs the handshake done (on the driver under test).
    func run(on driver: DriverUnderTest) async {
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
