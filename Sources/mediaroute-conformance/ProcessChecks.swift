import Foundation
import MediaRouteIPC
import MediaRouteWire

/// The driver's process life seen from the supervisor's side (§1, §4, §11.2 "The driver's
/// process"): it exits when descriptor 3 reaches end of file, also in the middle of a request;
/// a hello answered late (within the 5 s deadline) still opens the connection; a hello never
/// answered leaves it neither crashed nor spinning.
struct ProcessChecks {
    let setup: KitSetup
    let report: ConformanceReport
    /// How long a driver may take to leave after its descriptor 3 closed.
    static let exitBound: Duration = .seconds(5)
    /// The hello is answered this late.
    static let helloDelay: Duration = .seconds(2)
    /// The hello is left unanswered this long: past the 5 s handshake deadline.
    static let unansweredHello: Duration = .milliseconds(5500)

    func run() async {
        async let unanswered = report.check("§4 Handshake", "a hello left unanswered past the 5 s deadline: the driver neither crashes nor spins (under 1 s of CPU)") {
            try await unansweredHello()
        }
        await report.check("§11.2 The driver's process", "the supervisor closing mid-request (discovery.start sent, socket closed): the driver exits within \(Self.exitBound)") {
            try await RawDriverChannel.with(setup) { channel in
                try await channel.handshake()
                try channel.send(.request(id: .number(2), method: ToDriver.StartDiscovery.method, params: [:], descriptorCount: 0))
                channel.closeOurEnd()
                return await exited(channel.launch, what: "after its descriptor 3 closed")
            }
        }
        await report.check("§4 Handshake", "a hello answered \(Self.helloDelay) late (within the 5 s deadline) still opens the connection") {
            try await DriverUnderTest.with(setup, helloDelay: Self.helloDelay) { driver in
                _ = try await driver.connection.request("rpc.ping", [:], timeout: setup.heartbeatTimeout)
                return .pass
            }
        }
        _ = await unanswered
    }

    /// §11.2: on end of file the driver leaves; that it does after the well-formed run is checked
    /// by the caller through this.
    func exitsAtEndOfFile(_ driver: DriverUnderTest) async {
        await report.check("§11.2 The driver's process", "the driver exits when descriptor 3 reaches end of file (idle exit), within \(Self.exitBound)") {
            await driver.connection.close()
            return await exited(driver.launch, what: "after its descriptor 3 closed")
        }
    }

    private func exited(_ launch: DriverLaunch, what: String) async -> Verdict {
        guard let termination = await launch.exit(within: Self.exitBound) else { return .fail("still running \(Self.exitBound) \(what) (killed)") }
        if case .signalled = termination { return .fail("\(termination) \(what)") }
        return .pass("\(termination)")
    }

    private func unansweredHello() async throws -> Verdict {
        let (first, after, used, ended) = try await RawDriverChannel.with(setup) { channel in
            let before = channel.launch.cpuSeconds ?? 0
            let first = await channel.read(within: .seconds(5))
            // Nothing is answered: what the driver does meanwhile is what is judged.
            let after = await channel.read(within: Self.unansweredHello)
            let used = (channel.launch.cpuSeconds ?? before) - before
            return (first, after, used, channel.launch.child.exitIfEnded())
        }
        guard case .message(.request(_, "hello", _, _)) = first else { return .fail("the driver's first message was \(first), not hello") }
        if case .signalled? = ended { return .fail("the driver \(ended!) while waiting for the answer to its hello") }
        if case .message(let message) = after { return .fail("the driver sent \(message) before its hello was answered (§4: nothing else may be sent)") }
        guard used < 1 else { return .fail("the driver used \(String(format: "%.1f", used)) s of CPU in \(Self.unansweredHello) waiting: it spins") }
        return .pass(ended.map { "it \($0)" } ?? (after.isClosed ? "it closed the connection" : "it waited") + String(format: ", %.2f s of CPU", used))
    }
}

extension RawDriverChannel.Read {
    var isClosed: Bool { if case .closed = self { true } else { false } }
}
