import AVSystemRouting
import Foundation
import MediaDevice
@testable import MediaRouteSupervisor
import Testing
import TestSupport

@Suite("AVSystemRouting: data channels", .timeLimit(.minutes(2)))
struct DataChannelTests {
    /// Two apps of one protocol on one route; the test driver's device applications answer every
    /// message with its bytes reversed.
    @Test func dataFlowsBothWaysOnBothChannelsInOrderAndOnlyToItsApp() async throws {
        try await AppTestBed.run(driver: "org.test.alpha", devices: ["Den TV"]) { bed in
            let notes = bed.controller("org.test.notes", protocols: ["org.test.alpha"])
            let other = bed.controller("org.test.other", protocols: ["org.test.alpha"])
            let notesRecorder = AppRecorder(), otherRecorder = AppRecorder()
            #expect(notes.addObserver(notesRecorder) && other.addObserver(otherRecorder))
            try await bed.discover(["Den TV"])
            try await bed.activate("Den TV")
            try await bed.eventually("both apps have the route") { notesRecorder.activeRoute != nil && otherRecorder.activeRoute != nil }
            let route = try #require(await notesRecorder.activeRoute)

            // The route-level channel works as soon as the route is active, with no session.
            try await route.routeDataChannel.send(Data("hello".utf8))
            try await bed.eventually("route echo") { notesRecorder.received == ["olleh"] }

            // In order, many messages.
            for i in 0..<50 { try await route.routeDataChannel.send(Data("m\(i)".utf8)) }
            try await bed.eventually("50 echoes") { notesRecorder.received.count == 51 }
            #expect(await notesRecorder.received.dropFirst() == (0..<50).map { String("m\($0)".reversed()) }[...])

            // The session-level channel of an application-mode session.
            let session = AVSystemRouteSession(url: URL(string: "http://127.0.0.1:9/show.mp4")!, mode: .application)
            #expect(route.addSession(session))
            let media = try await session.start()
            let channel = try #require(media.dataChannel)
            let sessionRecorder = AppRecorder()
            await MainActor.run { channel.dataDelegate = sessionRecorder }
            try await channel.send(Data("ping".utf8))
            try await bed.eventually("session echo") { sessionRecorder.received == ["gnip"] }

            // Nothing of it reached the other app, on either channel.
            try await Task.sleep(for: .milliseconds(200))
            #expect(await otherRecorder.received.isEmpty)
            #expect(await notesRecorder.received.count == 51)

            // Too large: refused before leaving the app; the channel still works afterwards.
            let tooLarge = Data(count: AVSystemRouteDataChannel.maximumMessageSize + 1)
            let error = await #expect(throws: AVSystemRoutingError.self) { try await route.routeDataChannel.send(tooLarge) }
            #expect(error?.code == .messageTooLarge)
            #expect(error?.message == "a data message of 1048577 bytes is over the 1048576-byte limit; split it")
            try await channel.send(Data(count: AVSystemRouteDataChannel.maximumMessageSize))
            try await bed.eventually("a message of exactly the limit echoed") { sessionRecorder.received.count == 2 }

            // Once the route is gone, sending is a clear error.
            try await bed.supervisor.deactivate("Den TV")
            try await bed.eventually("deactivated") { notesRecorder.events.count == 2 }
            let gone = await #expect(throws: AVSystemRoutingError.self) { try await route.routeDataChannel.send(Data("late".utf8)) }
            #expect(gone?.code == .routeInactive)
            #expect(gone?.message == "the route to Den TV ended: deactivated by the operator")
            await #expect(throws: AVSystemRoutingError.self) { try await channel.send(Data("late".utf8)) }
        }
    }
}
