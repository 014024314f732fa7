import MediaRouteIPC
import MediaRouteWire

/// Faults the well-formed connection can carry, from the supervisor's side: requests abandoned
/// mid-flight (§7), an `rpc.cancel` for an id never sent, a method the driver does not have
/// (§10: `-32601`), and params that do not match §11 (`-32602`). Each time the driver must go on
/// answering heartbeats.
struct CancellationChecks {
    let setup: KitSetup
    let report: ConformanceReport

    func run(on driver: DriverUnderTest) async {
        await report.check("§7 Cancellation", "a request abandoned mid-flight (rpc.cancel right after it) leaves the driver answering") {
            // A timeout of a microsecond: the request is written, then its timeout passes on the
            // loop and the connection sends rpc.cancel (§7), whether or not the answer crossed it
            // on the wire (the connection drops a late answer, as §7 asks).
            do {
                _ = try await driver.connection.request("rpc.ping", [:], timeout: .microseconds(1))
            } catch let error as RPCError where error.code == .timedOut {}
            return try await stillAnswers(driver, after: "an abandoned request")
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
