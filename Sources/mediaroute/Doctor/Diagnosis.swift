/// One finding of `mediaroute doctor`: what a check looked at, its verdict, what it found, and
/// what to do about it, each a sentence a person can act on.
struct Diagnosis: Codable, Sendable, Equatable {
    enum Verdict: String, Codable, Sendable, Comparable {
        case ok, skipped, warning, problem

        static func < (lhs: Verdict, rhs: Verdict) -> Bool { lhs.rank < rhs.rank }
        private var rank: Int { [.ok: 0, .skipped: 1, .warning: 2, .problem: 3][self] ?? 0 }
    }

    /// The check's group: `daemon`, `drivers`, `avahi`, `multicast`, `firewall` or `device`.
    let check: String
    /// What it is about: the daemon, a driver's protocol, an interface, a firewall rule, the device.
    let subject: String
    let verdict: Verdict
    /// What was found.
    let finding: String
    /// What to do (for a warning or problem), or why the check was skipped.
    let fix: String?
    /// Evidence: log lines, rules, addresses.
    let details: [String]

    init(_ check: String, _ subject: String, _ verdict: Verdict, _ finding: String, fix: String? = nil, details: [String] = []) {
        (self.check, self.subject, self.verdict, self.finding, self.fix, self.details) = (check, subject, verdict, finding, fix, details)
    }
}
