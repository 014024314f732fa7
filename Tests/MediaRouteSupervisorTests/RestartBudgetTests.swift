@testable import MediaRouteSupervisor
import Testing

@Suite("Restart budget: backoff and intensity")
struct RestartBudgetTests {
    @Test func backoffDoublesUpToTheMaximumThenTheBudgetIsSpent() {
        var policy = RestartPolicy()
        policy.intensity = 5
        policy.period = .seconds(60)
        policy.initialBackoff = .milliseconds(100)
        policy.maximumBackoff = .milliseconds(500)
        var budget = RestartBudget(policy: policy)
        let start = ContinuousClock.now
        let decisions = (0..<6).map { budget.crashed(at: start + .seconds($0)) }
        #expect(decisions == [.restart(after: .milliseconds(100)), .restart(after: .milliseconds(200)), .restart(after: .milliseconds(400)),
                              .restart(after: .milliseconds(500)), .restart(after: .milliseconds(500)), .giveUp(count: 6)])
    }

    @Test func crashesOutsideThePeriodDoNotCount() {
        var policy = RestartPolicy()
        policy.intensity = 2
        policy.period = .seconds(10)
        var budget = RestartBudget(policy: policy)
        let start = ContinuousClock.now
        #expect(budget.crashed(at: start) == .restart(after: .milliseconds(100)))
        #expect(budget.crashed(at: start + .seconds(1)) == .restart(after: .milliseconds(200)))
        // A quiet period later: the old crashes have aged out, and the backoff starts over.
        #expect(budget.crashed(at: start + .seconds(30)) == .restart(after: .milliseconds(100)))
        #expect(budget.crashed(at: start + .seconds(31)) == .restart(after: .milliseconds(200)))
        #expect(budget.crashed(at: start + .seconds(32)) == .giveUp(count: 3))
        budget.reset()
        #expect(budget.crashed(at: start + .seconds(33)) == .restart(after: .milliseconds(100)))
    }
}
