/// When a crashed driver is restarted: after an exponentially growing pause, and at most
/// `intensity` times within `period` (as OTP supervisors count); past that it stays down until
/// an operator enables it.
public struct RestartPolicy: Sendable, Hashable {
    public var intensity = 5
    public var period: Duration = .seconds(60)
    public var initialBackoff: Duration = .milliseconds(100)
    public var maximumBackoff: Duration = .seconds(5)

    public init() {}
}

/// The restart history of one driver, against its policy.
public struct RestartBudget: Sendable {
    public let policy: RestartPolicy
    private(set) var recentCrashes: [ContinuousClock.Instant] = []
    /// Crashes since the driver last ran for a whole period without one; sets the backoff.
    private(set) var consecutiveCrashes = 0

    public init(policy: RestartPolicy) { self.policy = policy }

    public enum Decision: Sendable, Equatable {
        case restart(after: Duration)
        /// The budget is spent: `count` crashes within the period.
        case giveUp(count: Int)
    }

    /// Records a crash at `now` and says what to do.
    public mutating func crashed(at now: ContinuousClock.Instant) -> Decision {
        recentCrashes.removeAll { now - $0 > policy.period }
        if recentCrashes.isEmpty { consecutiveCrashes = 0 }
        recentCrashes.append(now)
        consecutiveCrashes += 1
        if recentCrashes.count > policy.intensity { return .giveUp(count: recentCrashes.count) }
        var backoff = policy.initialBackoff
        for _ in 1..<consecutiveCrashes {
            backoff *= 2
            if backoff >= policy.maximumBackoff { break }
        }
        return .restart(after: min(backoff, policy.maximumBackoff))
    }

    /// An operator enabled the driver again: start from a clean slate.
    public mutating func reset() {
        recentCrashes.removeAll()
        consecutiveCrashes = 0
    }
}
