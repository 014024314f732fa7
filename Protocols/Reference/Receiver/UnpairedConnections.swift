/// How long, and how many, connections that finished `hello` but are not authorized may stay open.
/// Anyone on the LAN can open them, and each holds a descriptor: unbounded, a stranger holding
/// thousands starves the controllers that paired (PROTOCOL.md §2.1).
struct UnpairedLimits: Sendable {
    /// Closed after this long without a request, unless a pairing begun on it is pending (its
    /// code's 120 s bound it then).
    var idle: Duration = .seconds(20)
    /// Closed this long after it was accepted whatever it does: a little over a code's 120 s, so a
    /// person typing the code in time is never cut off.
    var lifetime: Duration = .seconds(150)
    /// Open at once from one source address; one more closes that address's oldest.
    var perAddress = 4
    /// Open at once in all; one more closes the oldest of the address holding the most.
    var total = 64
}

/// The receiver's connections that are not authorized yet, and which of them to close when: the
/// book-keeping behind `UnpairedLimits`. Authorized connections are never here, so they are never
/// closed to make room. Kept by the receiver, on its executor.
struct UnpairedConnections {
    let limits: UnpairedLimits
    private var links: [ObjectIdentifier: ControllerLink] = [:]

    init(limits: UnpairedLimits) { self.limits = limits }

    var count: Int { links.count }

    /// Takes `link` in; returns the connections to close to stay within the caps, and why.
    mutating func admit(_ link: ControllerLink) -> [(link: ControllerLink, why: String)] {
        var closing: [(link: ControllerLink, why: String)] = []
        let sameAddress = links.values.filter { $0.host == link.host }.sorted { $0.accepted < $1.accepted }
        for oldest in sameAddress.prefix(max(0, sameAddress.count + 1 - limits.perAddress)) {
            closing.append((oldest, "\(link.host) may keep \(limits.perAddress) unpaired connections open at once"))
            remove(oldest)
        }
        links[ObjectIdentifier(link)] = link
        while links.count > limits.total, let victim = oldestOfTheLargestAddress() {
            let held = links.values.filter { $0.host == victim.host }.count
            closing.append((victim, "the receiver keeps \(limits.total) unpaired connections at most and \(victim.host) holds the most (\(held))"))
            remove(victim)
        }
        return closing
    }

    mutating func remove(_ link: ControllerLink) {
        links[ObjectIdentifier(link)] = nil
    }

    /// When `link` is to be closed; `pendingUntil` is when the pairing begun on it expires, if one is pending.
    func deadline(of link: ControllerLink, pendingUntil: ContinuousClock.Instant?) -> ContinuousClock.Instant {
        let idle = link.lastRequest + limits.idle
        return min(link.accepted + limits.lifetime, max(idle, pendingUntil ?? idle))
    }

    /// The connections whose time is up at `now`, and why; and the next time one will be.
    func overdue(now: ContinuousClock.Instant, pendingUntil: (ObjectIdentifier) -> ContinuousClock.Instant?)
        -> (due: [(link: ControllerLink, why: String)], next: ContinuousClock.Instant?) {
        var due: [(link: ControllerLink, why: String)] = [], next: ContinuousClock.Instant?
        for (id, link) in links {
            let deadline = deadline(of: link, pendingUntil: pendingUntil(id))
            if deadline > now {
                next = min(next ?? deadline, deadline)
            } else if now >= link.accepted + limits.lifetime {
                due.append((link, "open \(Self.seconds(limits.lifetime)) without pairing, the longest an unpaired connection may stay"))
            } else {
                due.append((link, "idle \(Self.seconds(limits.idle)) without pairing"))
            }
        }
        return (due, next)
    }

    private func oldestOfTheLargestAddress() -> ControllerLink? {
        let byAddress = Dictionary(grouping: links.values, by: \.host)
        guard let most = byAddress.values.map(\.count).max() else { return nil }
        return byAddress.values.filter { $0.count == most }.joined().min { $0.accepted < $1.accepted }
    }

    private static func seconds(_ duration: Duration) -> String {
        "\(duration.components.seconds) s"
    }
}
