import Foundation
import PrivateDaemons
import Testing
import TestSupport

/// A sound output that takes seconds to open (PipeWire whose session manager went away mid-session
/// waits 5 s for a link that never comes) is opened on the players' threads: the receiver answers
/// meanwhile, and the failure comes later with its reason.
extension SoundOutputTests {
    @Test func aSoundOutputSlowToOpenDoesNotStallTheReceiver() async throws {
        let pipeWire = try await PrivatePipeWire()
        try await withTearDown {
            try await ReferenceTestBed.run { bed in
                let receiver = try await bed.listedReceiver(arguments: ["--auth", "none", "--audio-output", "pipewire"], environment: pipeWire.environment)
                try await receiver.waitFor("sound to pipewire (a PipeWire stream)")
                await pipeWire.stopSessionManager()
                let app = bed.app()
                let observer = AppObserver()
                #expect(app.addObserver(observer))
                try await bed.activate("Den TV") { _ in nil }
                try await bed.harness.waitUntil("app has the route") { await MainActor.run { observer.route != nil } }
                let route = try #require(await MainActor.run { observer.route })
                let reason = "the PipeWire server at \(pipeWire.runtimeDirectory)/pipewire-0 cannot play: nothing linked its stream to a sink within 5 s (is its session manager, wireplumber, running, and is there a sink?)"

                // A real-time stream opens at once; its sound output fails 5 s later, on its own thread.
                var mark = receiver.output.utf8.count
                let stream = try await route.startAudioStream()
                // The receiver opened the stream (its port), then is asked for its status.
                try await receiver.waitFor("stream r1 from ", after: mark)
                receiver.press("status")
                try await receiver.waitFor("stream r1: \(reason)", after: mark)
                try assertAnsweredBefore(receiver, "stream r1: \(reason)", after: mark)
                try await stream.stop()
                try await receiver.waitFor("stream r1: its sound output failed: \(reason)", after: mark)
                try await receiver.waitFor("stream r1 ended: ", after: mark)

                // A URL starts at once too, and fails with the reason once its sound output has not opened.
                mark = receiver.output.utf8.count
                let url = bed.media.url("tone.wav")
                _ = try await bed.supervisor.startSession("Den TV", url: url)
                try await receiver.waitFor("playing \(url) for ", after: mark)
                receiver.press("status")
                try await receiver.waitFor(" failed: cannot play \(url): \(reason)", after: mark)
                try assertAnsweredBefore(receiver, " failed: cannot play \(url): \(reason)", after: mark)
            }
        } tearDown: {
            await pipeWire.stop()
        }
    }

    /// The console's `status` (typed after the request) was answered before `failure` was said:
    /// the loop answered while the device was still opening (5 s), not after.
    private func assertAnsweredBefore(_ receiver: ReceiverProcess, _ failure: String, after mark: Int) throws {
        let output = receiver.console.output(after: mark)
        let status = try #require(output.range(of: ", sound to pipewire, video to "), "no status answer:\n\(output)")
        let failed = try #require(output.range(of: failure))
        #expect(status.lowerBound < failed.lowerBound, "status was answered only after the failure:\n\(output)")
    }
}
