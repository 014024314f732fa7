import Foundation
import MediaRouteIPC
import Testing
import TestSupport

/// The README's first Quick start command runs `mediaroute-demo`: it must work here, as it would on
/// a fresh machine, and leave nothing running.
@Suite("The demo", .timeLimit(.minutes(2)))
struct DemoTests {
    @Test func theDemoRunsEveryStepAndCleansUp() async throws {
        let output = try await ChildOutput.run(DaemonHarness.binary("mediaroute-demo"), [])
        let transcript = output.standardOutput + output.standardError
        #expect(output.termination == .exited(0), "\(transcript)")
        for step in ["$ mediaroute devices", "Demo TV  tv    url, audio, video  MediaRoute", "<- the code Demo TV shows", "Demo TV is active through MediaRoute",
                     "playing http://127.0.0.1:", "Demo TV: volume 30%", "Demo TV: volume 60%", "data: noted 2", "data: buy milk", "Demo TV deactivated",
                     "everything it started is stopped"] {
            #expect(transcript.contains(step), "missing \"\(step)\" in:\n\(transcript)")
        }
        // Nothing it started is left: no namespace, no receiver.
        let namespace = transcript.split(separator: " ").first { $0.hasPrefix("mediaroute-") && $0.count == 19 }.map(String.init)
        if let namespace {
            let list = try await ChildOutput.run("/usr/sbin/ip", ["netns", "list"])
            #expect(!list.standardOutput.contains(namespace))
        }
        let receivers = try await ChildOutput.run("/usr/bin/pgrep", ["-f", "mediaroute-receiver --name Demo TV"])
        #expect(receivers.standardOutput.isEmpty)
    }
}
