/// How a capture's frame stamps fall on its ticks: a session grabs at `period` intervals from its
/// first tick, never before a tick (a grab behind by less than a period comes at once, one behind
/// by more skips the ticks missed). Each stamp is placed on the last tick of that grid before it
/// (the grid's phase taken from the median stamp: most grabs come within a millisecond or two of
/// their tick, a little either side of the median); a stamp more than `tolerance` past it is late.
struct TickPace: CustomStringConvertible {
    /// Each stamp's tick, counted from the first stamp's.
    let ticks: [Int]
    /// The stamps further than the tolerance from their tick, as (index, nanoseconds off).
    let late: [(index: Int, off: Int64)]
    /// Ticks without a frame between the first and the last.
    var skipped: Int { (ticks.last ?? 0) - (ticks.count - 1) }

    init(stamps: [UInt64], period: UInt64, tolerance: UInt64? = nil) {
        let allowed = Int64(tolerance ?? period / 5)
        let period = Int64(period)
        let first = Int64(stamps.first ?? 0)
        // Each stamp's phase within a period, from -period/2 to period/2; the median is the grid's.
        let phase = { (stamp: Int64) -> Int64 in
            let within = (stamp - first) % period
            return within > period / 2 ? within - period : within
        }
        let phases = stamps.map { phase(Int64($0)) }.sorted()
        let origin = first + (phases.isEmpty ? 0 : phases[phases.count / 2])
        var ticks: [Int] = [], late: [(Int, Int64)] = []
        for (index, stamp) in stamps.enumerated() {
            let since = Int64(stamp) - origin
            let tick = Int((since + allowed).floorDivided(by: period))
            let off = since - Int64(tick) * period
            ticks.append(tick)
            if abs(off) > allowed { late.append((index, off)) }
        }
        let start = ticks.first ?? 0
        self.ticks = ticks.map { $0 - start }
        self.late = late
    }

    var description: String {
        "\(ticks.count) frames over \(ticks.last ?? 0) ticks (\(skipped) skipped), \(late.count) late: \(late.map { "#\($0.index) \($0.off / 1_000_000) ms" })"
    }
}

private extension Int64 {
    func floorDivided(by divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }
}
