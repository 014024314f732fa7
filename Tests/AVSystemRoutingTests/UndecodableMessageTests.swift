@testable import AVSystemRouting
import Foundation
import MediaDevice
import MediaRouteIPC
import PrivateDaemons
import Testing
import TestSupport

/// A route that does not decode is an error naming the method and the member (issue 12): the
/// answer to a request fails the call with it; a notification is reported; neither is dropped unseen,
/// and what follows still works.
@Suite("AVSystemRouting: messages that do not decode", .timeLimit(.minutes(1)))
struct UndecodableMessageTests {
    /// A device whose capabilities are a string, not a list.
    static let badCapabilities: JSONValue = "urlPlayback"

    @Test func aRouteThatDoesNotDecodeIsAnErrorNamingTheMethodAndTheMember() async throws {
        var handlers = RPCHandlers()
        handlers.onRequest("app.routes") { _ in RPCReply(["routes": [FakeDaemon.route("s1", capabilities: Self.badCapabilities)]]) }
        handlers.onRequest("app.session.start") { _ in RPCReply(FakeDaemon.route("s3", capabilities: Self.badCapabilities)) }
        let daemon = try await FakeDaemon(handlers: handlers)
        let controller = AVSystemRouteController(configuration: .init(applicationIdentifier: "org.test.app", supportedProtocols: ["org.test.alpha"],
                                                                      socketPath: daemon.path))
        try await withTearDown {
            let recorder = AppRecorder()
            #expect(controller.addObserver(recorder))

            // The routes active before the app connected: the answer to app.routes.
            try await waitUntil("app.routes reported") { !controller.problems.all.isEmpty }
            let listed = try #require(controller.problems.all.first)
            #expect(listed.contains("app.routes") && listed.contains("\"routes[0].device.capabilities\": expected an array, got a string"), "\(listed)")
            #expect(controller.activeRoutes.isEmpty)

            // A notification: reported, and the one after it still arrives.
            let app = try #require(daemon.app)
            app.post("route.activated", ["route": FakeDaemon.route("s2", capabilities: Self.badCapabilities)])
            app.post("route.activated", ["route": FakeDaemon.route("s3")])
            try await waitUntil("the good route delivered") { await recorder.activeRoute != nil }
            let reported = controller.problems.all.last ?? ""
            #expect(reported.contains("route.activated: \"route.device.capabilities\": expected an array, got a string"), "\(reported)")
            #expect(controller.activeRoutes.map(\.identifier) == ["s3"])

            // The answer to a request: the caller gets the error.
            let route = try #require(controller.activeRoutes.first)
            let session = AVSystemRouteSession(url: URL(string: "http://127.0.0.1:9/film.mp4")!, mode: .player)
            #expect(route.addSession(session))
            let error = await #expect(throws: AVSystemRoutingError.self) { _ = try await session.start() }
            #expect(error?.code == .protocolError)
            #expect(error?.message.contains("app.session.start") == true && error?.message.contains("\"device.capabilities\"") == true,
                    "\(String(describing: error))")
        } tearDown: {
            await controller.invalidate()
            await daemon.stop()
        }
    }
}
