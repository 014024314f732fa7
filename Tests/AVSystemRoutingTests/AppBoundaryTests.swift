import AVSystemRouting
import Foundation
import MediaDevice
import MediaRouteIPC
@testable import MediaRouteSupervisor
import Testing
import TestSupport

/// What one app can learn of another's business through the daemon: nothing.
@Suite("AVSystemRouting: apps see only what is theirs", .timeLimit(.minutes(2)))
struct AppBoundaryTests {
    /// An app's raw connection to the daemon, as any program could open one.
    private func rawApp(_ bed: AppTestBed, _ identifier: String, protocols: [String]) async throws -> Connection {
        let identity = AppHelloIdentity(name: identifier, applicationIdentifier: identifier, supportedProtocols: protocols)
        return try await Connection.open(socket: try UnixSocket.connect(path: bed.socket), hello: Hello(role: .app, name: identifier, identity: identity.object),
                                         side: .initiator(), configuration: ConnectionConfiguration(label: "mediarouted"))
    }

    @Test func anAppsPickerListsOnlyTheProtocolsItDeclared() async throws {
        try await AppTestBed.run { bed in
            try bed.harness.addDriver("org.test.alpha", devices: ["Den TV"])
            try bed.harness.addDriver("org.test.beta", devices: ["Den TV", "Hall Speaker"])
            try await bed.start()
            // The operator's picker, open while the app opens its own, lists both drivers' devices.
            let view = PickerView()
            let picker = await bed.supervisor.openPicker { view.update($0) }
            try await bed.harness.waitUntil("both devices listed") { view.names() == ["Den TV", "Hall Speaker"] && view.current.first { $0.name == "Den TV" }?.routes.count == 2 }

            let app = try await rawApp(bed, "org.test.alpha-app", protocols: ["org.test.alpha"])
            let entries = try await app.call(Control.OpenPicker()).entries
            // "Den TV" is reached by both drivers; the app sees it through its own protocol only, and
            // "Hall Speaker" (beta only) not at all.
            #expect(entries.map(\.name) == ["Den TV"])
            #expect(entries.first?.routes.map(\.protocol) == ["org.test.alpha"])
            #expect(entries.first?.preferredProtocol == "org.test.alpha")
            await app.close()

            await bed.supervisor.closePicker(picker.id)
        }
    }

    @Test func aSecondConnectionUnderATakenAppIdentifierIsRefusedAndStealsNothing() async throws {
        try await AppTestBed.run(driver: "org.test.alpha", devices: ["Den TV"]) { bed in
            let (notes, recorder, route) = try await bed.appWithActiveRoute("org.test.notes")

            let refused = await #expect(throws: RPCError.self) { try await rawApp(bed, "org.test.notes", protocols: ["org.test.alpha"]) }
            #expect(refused?.code == .roleRejected)
            #expect(refused?.message.contains("app org.test.notes is already connected (pid \(getpid())); an app identifier takes one connection at a time") == true,
                    "\(String(describing: refused?.message))")

            // The first app still gets its route's data (the test device answers reversed).
            try await route.routeDataChannel.send(Data("hello".utf8))
            try await bed.eventually("route echo to the first app") { recorder.received == ["olleh"] }

            // Once it leaves, the identifier is free again.
            await notes.invalidate()
            try await bed.harness.waitUntil("the identifier free again") {
                guard let again = try? await rawApp(bed, "org.test.notes", protocols: ["org.test.alpha"]) else { return false }
                await again.close()
                return true
            }
        }
    }
}
