import Testing

/// The pace check the mutter capture test applies to its frame stamps, on stamps made up here: it
/// passes a steady capture whatever its last frame did, and fails a capture at the wrong rate.
struct TickPaceTests {
    private let period: UInt64 = 50_000_000
    private let start: UInt64 = 7_000_000_123

    /// 41 grabs at 20 fps, each 1-3 ms after its tick.
    private var steady: [UInt64] { (0..<41).map { start + UInt64($0) * period + UInt64(1_000_000 + ($0 % 3) * 1_000_000) } }

    @Test func aSteadyCaptureIsOnItsTicks() {
        let pace = TickPace(stamps: steady, period: period)
        #expect(pace.ticks == Array(0...40) && pace.late.isEmpty && pace.skipped == 0, "\(pace)")
    }

    @Test func aLastFrameGrabbedLateIsOneLateFrameNotAWrongRate() {
        for lateness: UInt64 in [30_000_000, 70_000_000, 100_000_000] {
            var stamps = steady
            stamps[40] += lateness
            let pace = TickPace(stamps: stamps, period: period)
            #expect(pace.late.count <= 1 && pace.skipped <= 2, "last frame \(lateness / 1_000_000) ms late: \(pace)")
        }
    }

    @Test func aLateTickCaughtUpAtOnceAndASkippedTickAreCounted() {
        var stamps = steady
        stamps[10] += 70_000_000  // behind by more than a frame: the next grab comes at once
        stamps[11] = stamps[10] + 1_000_000
        stamps[20...].indices.forEach { stamps[$0] += period }  // a tick skipped
        let pace = TickPace(stamps: stamps, period: period)
        #expect(pace.ticks == pace.ticks.sorted() && pace.skipped == 1 && pace.late.count == 2, "\(pace)")
    }

    @Test func theWrongRateFails() {
        let fast = (0..<41).map { start + UInt64($0) * 40_000_000 }  // 25 fps
        let slow = (0..<41).map { start + UInt64($0) * 100_000_000 }  // 10 fps
        let (fastPace, slowPace) = (TickPace(stamps: fast, period: period), TickPace(stamps: slow, period: period))
        #expect(fastPace.late.count > 8, "\(fastPace)")
        #expect(slowPace.skipped > 8, "\(slowPace)")
    }
}
