import Foundation
import MediaDevice
import MediaRouteIPC
import PrivateDaemons
@testable import MediaRouteSupervisor
import Testing
import TestSupport

/// The daemon reports what the device does: a session that fails to replace another leaves
/// nothing playing anywhere, never a receiver playing what the daemon says is gone.
@Suite("Reference protocol: one truth about what plays", .serialized, .timeLimit(.minutes(2)))
struct OneTruthTests {
    @Test func aFailedReplacementLeavesNothingPlayingAnywhere() async throws {
        try await ReferenceTestBed.run { bed in
            // Long enough that only a stop, never the end of the media, leaves the receiver idle.
            try await MediaFileServer.makeTone(at: bed.harness.root + "/media/long.wav", seconds: 60, title: "Long Tone")
            let tv = try await bed.listedReceiver(arguments: ["--auth", "none"])
            try await bed.activate("Den TV") { _ in nil }
            _ = try await bed.supervisor.startSession("Den TV", url: bed.media.url("long.wav"))
            try await tv.statusShows("s1: playing")

            // The replacement names media the receiver cannot play: it refuses, and what played
            // before is stopped on the receiver too, as the error says.
            let failed = await #expect(throws: MediaDeviceError.self) {
                try await bed.supervisor.startSession("Den TV", url: bed.media.url("missing.wav"))
            }
            #expect(failed?.code == .sessionFailed)
            #expect(failed?.message.hasSuffix("; what played on Den TV before was stopped") == true, "\(String(describing: failed?.message))")
            try await tv.statusShows("nothing playing")
            #expect(await bed.playback("Den TV") == nil)
            let stop = await #expect(throws: MediaDeviceError.self) { try await bed.supervisor.stopSession("Den TV") }
            #expect(stop?.message == "nothing is playing on Den TV")

            // The route itself is fine: a good URL plays again.
            _ = try await bed.supervisor.startSession("Den TV", url: bed.media.url("long.wav"))
            try await tv.statusShows("s1: playing")
        }
    }
}
