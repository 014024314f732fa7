/// Wrong codes and the lockouts they earn, kept per source address and per controller id at that
/// address: a stranger's mistakes (or malice) lock only the stranger, never another host, and a
/// host that claims a new controller id for every try is still bounded by its address.
///
/// Every third wrong code in a row locks the subject, for 30 s the first time, doubling each time
/// after, up to 8 hours. A successful pairing from an address forgives it; so does a day without a
/// wrong code. What that allows one address to guess at a 4-digit code, at most:
///
/// - 3 tries, then locks of 30, 60, 120, ... 15,360 s, then 28,800 s (8 h) each: the first day holds
///   12 rounds of 3 tries (the 12th begins 59,490 s after the first try; its lock outlasts the day), so
///   **36 tries on the worst day**, P(success) = 1 − (1 − 10⁻⁴)³⁶ ≈ **0.36%**; every later day holds
///   3 rounds, **9 tries, ≈ 0.09%**. (A 6-digit code: 0.0036% and 0.0009%.)
/// - A cap of 1 hour would allow 90 tries on the first day (0.9%) and 72 a day after: too close to
///   1%, hence 8 hours, which a person typing codes by hand never reaches (30 wrong codes in a row).
///
/// Kept by `PairingBook`, on the event loop.
struct LockoutBook {
    enum Subject: Hashable {
        case address(String)
        case controller(String, at: String)
    }

    private struct Record {
        /// Wrong codes since the last lockout.
        var failures = 0
        var lockouts = 0
        var lockedUntil: ContinuousClock.Instant?
        var lastFailure: ContinuousClock.Instant
    }

    static let failuresPerLockout = 3
    static let firstLockout: Duration = .seconds(30)
    static let longestLockout: Duration = .seconds(8 * 3600)
    /// A subject without a wrong code for this long starts afresh.
    static let forgivenAfter: Duration = .seconds(24 * 3600)

    private var records: [Subject: Record] = [:]

    /// What a wrong code led to.
    enum Verdict: Equatable {
        case attemptsLeft(Int)
        case locked(Duration)
    }

    /// How long the longest lockout among `subjects` still lasts; nil when none is locked.
    func lockedFor(_ subjects: [Subject], now: ContinuousClock.Instant) -> Duration? {
        subjects.compactMap { record($0, now: now)?.lockedUntil }.filter { $0 > now }.max().map { $0 - now }
    }

    /// Counts a wrong code against every subject; the verdict is the strictest of theirs.
    mutating func recordFailure(_ subjects: [Subject], now: ContinuousClock.Instant) -> Verdict {
        // A day-old record is forgiven: forget those, so the book stays as small as the day's mistakes.
        records = records.filter { now - $0.value.lastFailure < Self.forgivenAfter }
        var left = Self.failuresPerLockout
        var locked: Duration?
        for subject in subjects {
            var record = records[subject] ?? Record(lastFailure: now)
            record.failures += 1
            record.lastFailure = now
            if record.failures >= Self.failuresPerLockout {
                record.failures = 0
                record.lockouts += 1
                let length = min(Self.longestLockout, Self.firstLockout * (1 << min(record.lockouts - 1, 20)))
                record.lockedUntil = now + length
                locked = max(locked ?? .zero, length)
            } else {
                left = min(left, Self.failuresPerLockout - record.failures)
            }
            records[subject] = record
        }
        return locked.map(Verdict.locked) ?? .attemptsLeft(left)
    }

    /// A successful pairing: these subjects start afresh.
    mutating func forgive(_ subjects: [Subject]) {
        for subject in subjects { records[subject] = nil }
    }

    private func record(_ subject: Subject, now: ContinuousClock.Instant) -> Record? {
        guard let record = records[subject], now - record.lastFailure < Self.forgivenAfter else { return nil }
        return record
    }
}
