import MediaRouteIPC
import ReferenceProtocol

/// Pairings in progress, each belonging to the connection that called `pair.begin`: its code is
/// that connection's, and another connection claiming the same controller id cannot finish it.
/// Anyone may begin, so the table is bounded, per source address and in all; when full, a new
/// attempt is refused rather than one in progress evicted (a stranger must never be able to throw
/// out the pairing a person is typing a code for). Kept by `PairingBook`, on the event loop.
struct PairingAttempts {
    struct Attempt {
        let controller: String
        let address: String
        /// The code shown, empty for a password.
        let code: String
        let until: ContinuousClock.Instant
        var wrongCodes = 0
    }

    static let maximumPending = 16
    /// One address may have this many attempts pending: a host pairing from two apps at once, not a table full.
    static let maximumPendingPerAddress = 3

    private var attempts: [ObjectIdentifier: Attempt] = [:]

    /// The attempt `connection` began, while its code is valid.
    func attempt(of connection: ObjectIdentifier, now: ContinuousClock.Instant) -> Attempt? {
        attempts[connection].flatMap { $0.until > now ? $0 : nil }
    }

    /// Begins (or begins again) `connection`'s attempt, unless the table has no room for it.
    mutating func begin(_ attempt: Attempt, on connection: ObjectIdentifier, now: ContinuousClock.Instant) throws(ReferenceProtocolError) {
        attempts = attempts.filter { $0.value.until > now }
        let others = attempts.filter { $0.key != connection }
        let fromAddress = others.values.filter { $0.address == attempt.address }
        if fromAddress.count >= Self.maximumPendingPerAddress {
            throw Self.full(until: fromAddress.map(\.until).min() ?? now, now: now,
                            "\(fromAddress.count) pairings from \(attempt.address) are already waiting for their codes; finish or cancel one")
        }
        if others.count >= Self.maximumPending {
            throw Self.full(until: others.values.map(\.until).min() ?? now, now: now,
                            "\(others.count) pairings are already waiting for their codes on this receiver")
        }
        attempts[connection] = attempt
    }

    /// Counts a wrong code against `connection`'s attempt; true when that was its last chance.
    mutating func wrongCode(on connection: ObjectIdentifier, allowed: Int) -> Bool {
        guard var attempt = attempts[connection] else { return true }
        attempt.wrongCodes += 1
        attempts[connection] = attempt.wrongCodes >= allowed ? nil : attempt
        return attempt.wrongCodes >= allowed
    }

    /// The attempt is over: paired, void, or its connection closed.
    mutating func end(_ connection: ObjectIdentifier) {
        attempts[connection] = nil
    }

    private static func full(until: ContinuousClock.Instant, now: ContinuousClock.Instant, _ why: String) -> ReferenceProtocolError {
        let seconds = max(1, Int64((until - now).components.seconds) + 1)
        return ReferenceProtocolError(.rateLimited, "\(why); try again in \(seconds) seconds", data: ["retryAfterSeconds": .integer(seconds)])
    }
}
