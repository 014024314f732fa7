import Foundation
import MediaRouteIPC
import MediaRouteWire

/// The driver's process life seen from the supervisor's side (§1, §4, §11.2 "The driver's
/// process"): it exits when descriptor 3 reaches end of file, also in the middle of a request;
/// a hello answered late (within the 5 s deadline) still opens the connection; a hello never
/// answered makes it close the connection after 5 s and exit (§4, Timeout), sending nothing
/// meanwhile and without spinning.
struct ProcessChecks {
    let setup: KitSetup
    let report: ConformanceReport
    /// How long a driver may take to leave after its descriptor 3 closed.
    static let exitBound: Duration = .seconds(5)
    /// The hello is answered this late.
    static let helloDelay: Duration = .seconds(2)
    /// §4: an initiator whose hello is unanswered after 5 s closes the connection.
    static let handshakeDeadline: Duration = .seconds(5)
    /// What the kit allows past that deadline (timers, a busy machine), counted from when it read
    /// the hello: the driver's clock started earlier, when it sent it.
    static let deadlineGrace: Duration = .milliseconds(1500)

    func run() async {
        async let unanswered = report.check("§4 Handshake", "a hello left unanswered: within 5 s (+\(Self.deadlineGrace)) the driver closes the connection, having sent nothing else, and exits without a signal within \(Self.exitBound); it does not spin meanwhile (under 1 s of CPU)") {
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
        try await RawDriverChannel.with(setup) { channel in
            let first = await channel.read(within: .seconds(5))
            guard case .message(.request(_, "hello", _, _)) = first else { return .fail("the driver's first message was \(first), not hello") }
            let asked = ContinuousClock.now
            let before = channel.launch.cpuSeconds ?? 0
            // Nothing is answered: the driver must give up on its own, and say nothing meanwhile.
            let after = await channel.read(within: Self.handshakeDeadline + Self.deadlineGrace)
            let waited = ContinuousClock.now - asked
            let used = (channel.launch.cpuSeconds ?? before) - before
            let cpu = String(format: "%.2f s of CPU", used)
            switch after {
            case .message(let message): return .fail("the driver sent \(message) before its hello was answered (§4: nothing else may be sent)")
            case .garbage(let why): return .fail("the driver sent an unreadable frame before its hello was answered: \(why)")
            case .nothing:
                return .fail("the connection was still open \(Self.handshakeDeadline + Self.deadlineGrace) after the unanswered hello (§4: the initiator closes it after 5 s), \(cpu)")
            case .closed:
                guard used < 1 else { return .fail("the driver closed after \(waited.milliseconds) ms but used \(cpu) waiting: it spins") }
                guard let termination = await channel.launch.exit(within: Self.exitBound) else {
                    return .fail("the driver closed the connection after \(waited.milliseconds) ms but was still running \(Self.exitBound) later (killed)")
                }
                if case .signalled = termination { return .fail("the driver closed the connection after \(waited.milliseconds) ms, then \(termination)") }
                return .pass("closed after \(waited.milliseconds) ms, then \(termination); \(cpu)")
            }
        }
    }
}
