/// How much delay a playout buffer needs for the network it is on: each packet's transit (its
/// arrival time less its RTP timestamp, in seconds) is kept for the last `window` packets, and the
/// spread of those transits above the quickest one (the 97th percentile) is the jitter to absorb.
/// Small on loopback (well under a millisecond), as large as the delays on a jittery network. The
/// transits' trend (the sender's clock drifting from ours) is taken out first: drift is no jitter.
public struct PlayoutDelayEstimator: Sendable {
    public let clockRate: Int
    public let window: Int
    private var base: ContinuousClock.Instant?
    private var lastTimestamp: UInt32 = 0
    private var unwrapped: Int64 = 0
    /// (sent, transit) in seconds, a ring of `window`.
    private var transits: [(sent: Double, transit: Double)] = []
    private var oldest = 0
    public private(set) var jitter: Duration = .zero

    public init(clockRate: Int, window: Int = 200) {
        self.clockRate = clockRate
        self.window = window
    }

    /// Notes a packet with RTP `timestamp` that arrived at `arrival`.
    public mutating func add(timestamp: UInt32, arrival: ContinuousClock.Instant) {
        if let base {
            unwrapped += Int64(Int32(bitPattern: timestamp &- lastTimestamp))
            let transit = Self.seconds(arrival - base) - Double(unwrapped) / Double(clockRate)
            lastTimestamp = timestamp
            let sent = Double(unwrapped) / Double(clockRate)
            if transits.count < window {
                transits.append((sent, transit))
            } else {
                transits[oldest] = (sent, transit)
                oldest = (oldest + 1) % window
            }
        } else {
            base = arrival
            lastTimestamp = timestamp
            transits = [(0, 0)]
        }
        let residuals = detrended()
        let quickest = residuals.min() ?? 0
        let spread = residuals.map { $0 - quickest }.sorted()
        let percentile = spread[min(spread.count - 1, spread.count * 97 / 100)]
        jitter = .nanoseconds(Int64(percentile * 1e9))
    }

    /// The transits less their least-squares line over the send times.
    private func detrended() -> [Double] {
        let count = Double(transits.count)
        guard count > 2 else { return transits.map(\.transit) }
        let meanSent = transits.reduce(0) { $0 + $1.sent } / count
        let meanTransit = transits.reduce(0) { $0 + $1.transit } / count
        var covariance = 0.0, variance = 0.0
        for point in transits {
            covariance += (point.sent - meanSent) * (point.transit - meanTransit)
            variance += (point.sent - meanSent) * (point.sent - meanSent)
        }
        let slope = variance > 0 ? covariance / variance : 0
        return transits.map { $0.transit - slope * ($0.sent - meanSent) }
    }

    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18
    }
}
