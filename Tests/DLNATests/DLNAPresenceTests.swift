@testable import AVSystemRouting
import Foundation
import MediaDevice
import MediaRouteIPC
@testable import MediaRouteSupervisor
import PrivateDaemons
import Testing
import TestSupport

/// Whether a renderer is there, from SSDP alone: lost when its announcements run out without a
/// goodbye, and followed to a new address under the same UDN.
@Suite("DLNA: renderers coming and going", .serialized, .timeLimit(.minutes(3)))
struct DLNAPresenceTests {
    /// gmediarender announces `max-age=100` (libupnp's advertisement as gmediarender starts it; no
    /// option changes it), too long to wait for in a test: a renderer of the test's own announces
    /// `max-age=3` instead, `ssdp:alive` each second. With the picker closed (no searches), only its
    /// announcements keep it listed; killed (SIGKILL, no byebye) it is lost once its max-age has
    /// run out, and the log says so.
    @Test func aRendererWhoseAnnouncementsRunOutIsLost() async throws {
        try await DLNATestBed.run { bed in
            let host = try await bed.network.addHost()
            let announcer = try HostileRenderer.start(on: host, network: bed.network, mode: "plain", name: "Shed Radio",
                                                      directory: bed.harness.root, maxAge: 3)
            defer { Task { await announcer.stop() } }
            try await bed.listed("Shed Radio")
            // Two max-ages and more with no search: its announcements alone keep it listed.
            let kept = ContinuousClock.now + .seconds(7)
            while ContinuousClock.now < kept {
                let names = await bed.supervisor.pickerEntries().map(\.name)
                try #require(names.contains("Shed Radio"), "lost while it still announced itself: \(bed.harness.log.all.suffix(5))")
                try await Task.sleep(for: .milliseconds(200))
            }
            await announcer.stop()
            let silent = ContinuousClock.now
            try await bed.harness.waitUntil("lost once its max-age ran out", seconds: 10) {
                !(await bed.supervisor.pickerEntries().map(\.name)).contains("Shed Radio")
            }
            // Its last announcement was at most 1 s before the kill; expiry is looked at each second.
            #expect(ContinuousClock.now - silent < .seconds(5))
            #expect(bed.harness.log.all.contains { $0.contains("Shed Radio stopped announcing itself (its SSDP max-age ran out)") })
        }
    }

    /// The controller's network adapter goes away and comes back (a new interface, the same name
    /// and address): at the next search the driver joins the SSDP group on it again, and a
    /// renderer's goodbye is heard there. Before, the membership that went with the old interface
    /// was taken as still there: announcements went unheard until the driver restarted, and the
    /// renderer stayed listed for its max-age (gmediarender's: 100 s).
    @Test func announcementsAreHeardAgainAfterTheAdapterComesBack() async throws {
        try await DLNATestBed.run { bed in
            let renderer = try await bed.addRenderer("Porch Speaker")
            _ = try await bed.listed("Porch Speaker")
            let joinsBefore = bed.harness.log.all.filter { $0.contains("listening for SSDP announcements on br0") }.count
            try #require(joinsBefore == 1, "\(bed.harness.log.all.suffix(5))")
            try await bed.network.rebuildBridge()
            let picker = await bed.supervisor.openPicker { _ in }
            try await bed.harness.waitUntil("the group joined on the new adapter") {
                bed.harness.log.all.filter { $0.contains("listening for SSDP announcements on br0") }.count == 2
            }
            await bed.supervisor.closePicker(picker.id)
            await renderer.stop()
            // No search runs with the picker closed, and gmediarender's max-age is 100 s: only its
            // byebye takes it off the list.
            try await bed.harness.waitUntil("gone after its byebye, heard on the new adapter", seconds: 10) {
                !(await bed.supervisor.pickerEntries().map(\.name)).contains("Porch Speaker")
            }
        }
    }

    /// A renderer in use loses power and comes back on another address (same UDN, a new DHCP
    /// lease): the route on the old address ends saying where it went, the renderer is listed
    /// once, and activated again it is the one at the new address that the system controls.
    @Test func aRendererThatMovesIsListedOnceAtItsNewAddressAndActivatesThere() async throws {
        // The idle check (two unanswered in a row) is kept out of the window between the kill and
        // the new address's announcement: the route must end because it moved.
        try await DLNATestBed.run(environment: ["MEDIAROUTE_DLNA_IDLE_CHECK_SECONDS": "3600"]) { bed in
            let before = try await bed.addRenderer("Loft TV")
            let app = bed.app()
            let observer = ActivatedRouteObserver()
            #expect(app.addObserver(observer))
            try await bed.activated("Loft TV")
            try await bed.harness.waitUntil("app has the route") { await MainActor.run { observer.route != nil } }

            await before.kill()
            let after = try await bed.addRenderer("Loft TV", uuid: before.uuid)
            #expect(after.host.address != before.host.address)
            try await bed.harness.waitUntil("the route on the old address ends") { await bed.supervisor.activeRoutes().isEmpty }
            #expect(bed.harness.log.all.contains { $0.contains("Loft TV moved to \(after.host.address)") })

            let view = PickerView()
            let picker = await bed.supervisor.openPicker { view.update($0) }
            try await bed.harness.waitUntil("listed") { view.names() == ["Loft TV"] }
            #expect(view.current.first?.routes.map(\.device.id) == ["dlna:" + before.uuid])
            await bed.supervisor.closePicker(picker.id)

            try await bed.activated("Loft TV")
            _ = try await bed.supervisor.volume("Loft TV", .set(0.3))
            try await bed.harness.waitUntil("the renderer at the new address is at 30") {
                let answer = try? await bed.controlPoint(after, service: "RenderingControl", "GetVolume", [("InstanceID", "0"), ("Channel", "Master")])
                return answer.flatMap { DLNATestBed.value("CurrentVolume", in: $0) } == "30"
            }
        }
    }

    /// A renderer on two networks at once (wired and Wi-Fi: the same UDN announced from two
    /// addresses) is not taken for one that moved: the route stays on the address it has, and
    /// controls the renderer there.
    @Test func aRendererAtTwoAddressesKeepsItsRoute() async throws {
        try await DLNATestBed.run(environment: ["MEDIAROUTE_DLNA_IDLE_CHECK_SECONDS": "3600"]) { bed in
            let wired = try await bed.addRenderer("Study TV")
            try await bed.activated("Study TV")
            let wireless = try await bed.addRenderer("Study TV", uuid: wired.uuid)
            try await bed.harness.waitUntil("the second address heard and judged") {
                bed.harness.log.all.contains { $0.contains("Study TV is also at \(wireless.host.address)") }
            }
            #expect(await bed.supervisor.activeRoutes().count == 1)
            #expect(!bed.harness.log.all.contains { $0.contains("Study TV moved to") })
            _ = try await bed.supervisor.volume("Study TV", .set(0.2))
            try await bed.harness.waitUntil("the renderer the route is on is at 20") {
                let answer = try? await bed.controlPoint(wired, service: "RenderingControl", "GetVolume", [("InstanceID", "0"), ("Channel", "Master")])
                return answer.flatMap { DLNATestBed.value("CurrentVolume", in: $0) } == "20"
            }
        }
    }
}
