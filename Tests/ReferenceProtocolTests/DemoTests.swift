import Foundation
import MediaRouteIPC
import Testing
import TestSupport

/// The README's first Quick start command runs `mediaroute-demo`: it must work here, as it would on
/// a fresh machine, and leave nothing running.
@Suite("The demo", .timeLimit(.minutes(2)))
struct DemoTests {
    @Test func theDemoRunsEveryStepAndCleansUp() async throws {
        // A private Avahi even if this machine runs its own: tests never announce on a real network.
        let output = try await ChildOutput.run(DaemonHarness.binary("mediaroute-demo"), ["--private-avahi"])
        let transcript = output.standardOutput + output.standardError
        #expect(output.termination == .exited(0), "\(transcript)")
        for step in ["$ mediaroute devices", "Demo TV  tv    url, audio, video  MediaRoute", "<- the code Demo TV shows", "Demo TV is active through MediaRoute",
                     "playing http://127.0.0.1:", "Demo TV: volume 30%", "Demo TV: volume 60%", "data: noted 2", "data: buy milk", "Demo TV deactivated",
                     "everything it started is stopped"] {
            #expect(transcript.contains(step), "missing \"\(step)\" in:\n\(transcript)")
        }
        // Nothing it started is left: no namespace, no receiver.
        let namespace = try #require(transcript.split(separator: " ").first { $0.hasPrefix("mediaroute-") && $0.count == 19 }.map(String.init),
                                     "the demo did not say which network namespace it used:\n\(transcript)")
        let list = try await ChildOutput.run("/usr/sbin/ip", ["netns", "list"])
        #expect(!list.standardOutput.contains(namespace))
        let receivers = try await ChildOutput.run("/usr/bin/pgrep", ["-f", "mediaroute-receiver --name Demo TV"])
        #expect(receivers.standardOutput.isEmpty)
    }
}
