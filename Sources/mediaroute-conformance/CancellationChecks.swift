import MediaRouteIPC
import MediaRouteWire

/// Faults the well-formed connection can carry, from the supervisor's side: a request whose work
/// goes on abandoned mid-flight (§7), an `rpc.cancel` for an id never sent, a method the driver
/// does not have (§10: `-32601`), and params that do not match §11 (`-32602`). Each time the
/// driver must go on answering heartbeats.
struct CancellationChecks {
    let setup: KitSetup
    let report: ConformanceReport

    func run(on driver: DriverUnderTest) async {
        await report.check("§7 Cancellation", "a request whose work goes on is abandoned mid-flight (discovery.start, then rpc.cancel of it at once): the driver answers discovery.stop, discovery.start and discovery.stop again, and rpc.ping") {
            try await abandonedDiscovery(driver)
        }
        await report.check("§7 Cancellation", "rpc.cancel of an id never sent is ignored (a notification is never answered)") {
            try await driver.connection.notify("rpc.cancel", ["id": 987_654_321])
            return try await stillAnswers(driver, after: "rpc.cancel of an unknown id")
        }
        await report.check("§8 Violations", "an unknown method gets -32601 and the connection is kept (§10)") {
            do {
                let answer = try await driver.connection.request("conformance.noSuchMethod", ["probe": true], timeout: setup.requestTimeout)
                return .fail("answered with a result: \(answer.result)")
            } catch let error as RPCError where error.code == .methodNotFound {
                return try await stillAnswers(driver, after: "the unknown method")
            } catch let error as RPCError {
                return .fail("answered \(error), not -32601")
            }
        }
        await report.check("§8 Violations", "a request whose params do not match §11 gets -32602 naming the method and the member") {
            do {
                let answer = try await driver.connection.request("volume.get", ["device": "not a device object"], timeout: setup.requestTimeout)
                return .fail("answered with a result: \(answer.result)")
            } catch let error as RPCError where error.code == .invalidParams {
                return try await stillAnswers(driver, after: "the bad params", detail: error.message)
            } catch let error as RPCError {
                return .fail("answered \(error), not -32602")
            }
        }
        await report.check("§8 Violations", "the driver sent nothing the protocol forbids (no -32600/-32602/-32009 reasons on its side of the connection)") {
            let violations = driver.violations
            return violations.isEmpty ? .pass : .fail(violations.joined(separator: "; "))
        }
    }

    /// §7 on work that outlives its request: `discovery.start` is answered at once but discovery
    /// runs until `discovery.stop`. The kit sends the request and its `rpc.cancel` in one write, so
    /// the driver reads the cancel with the request, whatever the machine's load (a short timeout
    /// left that to chance: a busy machine read the answer first, and no cancel went out). A late
    /// answer is dropped, as §7 asks. What passing proves: the driver neither crashes nor wedges on
    /// an `rpc.cancel` naming a request whose work is under way, and that work stays under its
    /// control: it answers the request that ends it, starts it again, ends it again, and answers
    /// heartbeats. It does not prove the driver stopped anything (§7: it SHOULD; a discovery
    /// answered before the cancel was read has nothing to stop).
    private func abandonedDiscovery(_ driver: DriverUnderTest) async throws -> Verdict {
        func fails<Request: WireRequest>(_ request: Request, _ step: String) async -> Verdict? {
            do {
                _ = try await driver.call(request)
                return nil
            } catch {
                return .fail("after a discovery.start and its rpc.cancel, \(step) got \(error)")
            }
        }
        try await driver.connection.requestAbandoned(ToDriver.StartDiscovery.method)
        if let failed = await fails(ToDriver.StopDiscovery(), "discovery.stop") { return failed }
        if let failed = await fails(ToDriver.StartDiscovery(), "discovery.start again") { return failed }
        if let failed = await fails(ToDriver.StopDiscovery(), "discovery.stop again") { return failed }
        return try await stillAnswers(driver, after: "the abandoned discovery.start")
    }

    /// The driver still answers `rpc.ping` in time after `what`.
    private func stillAnswers(_ driver: DriverUnderTest, after what: String, detail: String = "") async throws -> Verdict {
        do {
            _ = try await driver.connection.request("rpc.ping", [:], timeout: setup.heartbeatTimeout)
            return .pass(detail)
        } catch {
            return .fail("after \(what), rpc.ping got \(error)")
        }
    }
}
