@testable import AVSystemRouting
import Foundation
import MediaDevice
import MediaRouteIPC
@testable import MediaRouteSupervisor
import PrivateDaemons
import Testing
import TestSupport

/// The DLNA driver's GENA event subscriptions against real gmediarender renderers, watched on the
/// wire at the renderer: renewed before they run out, cancelled when the route ends; and a renderer
/// that refuses events followed by polling.
@Suite("DLNA: event subscriptions", .serialized, .timeLimit(.minutes(3)))
struct DLNAEventTests {
    static let eventPaths = ["/upnp/event/rendertransport1", "/upnp/event/rendercontrol1"]

    /// An activated renderer and an app holding its route.
    private func route(_ bed: DLNATestBed, _ name: String) async throws {
        let app = bed.app()
        let observer = ActivatedRouteObserver()
        #expect(app.addObserver(observer))
        try await bed.activated(name)
        try await bed.harness.waitUntil("app has the route") { await MainActor.run { observer.route != nil } }
    }

    /// The SIDs of our subscriptions: those the renderer's first NOTIFYs (SEQ 0) on the wire carry.
    /// (The sink's NOTIFYs stay on the renderer's host and never cross the wire.)
    private func ourSIDs(_ tap: GENAWireTap) -> Set<String> {
        Set(tap.requests.filter { $0.method == "NOTIFY" && $0.seq == 0 }.compactMap(\.sid))
    }

    /// Subscriptions asked for 3 s (`MEDIAROUTE_DLNA_EVENT_SECONDS`): renewed (SUBSCRIBE with the SID,
    /// without CALLBACK or NT) each time before 3 s pass, so events still arrive after several
    /// timeouts, under the SIDs first granted. gmediarender drops a subscription whose time ran
    /// out: one the test made alongside (2 s, told apart by that) and never renewed is refused
    /// (412) by then, and no longer evented.
    @Test func subscriptionsAreRenewedBeforeTheyRunOutAndEventsKeepComing() async throws {
        try await DLNATestBed.run(environment: ["MEDIAROUTE_DLNA_EVENT_SECONDS": "3"]) { bed in
            let renderer = try await bed.addRenderer("Hall Speaker")
            let tap = try await bed.wireTap(on: renderer)
            let handMade = try await bed.gena("SUBSCRIBE", renderer, service: "RenderingControl",
                                              headers: ["CALLBACK: <\(tap.sinkURL)>", "NT: upnp:event", "TIMEOUT: Second-2"])
            #expect(handMade.status == 200)
            let handMadeSID = try #require(handMade.sid)
            try await route(bed, "Hall Speaker")
            try await bed.harness.waitUntil("both services evented to us") { ourSIDs(tap).count == 2 }
            let sids = ourSIDs(tap)
            for path in Self.eventPaths {
                let first = tap.requests.filter { $0.method == "SUBSCRIBE" && $0.path == path && $0.sid == nil && $0.timeout == "Second-3" }
                #expect(first.count == 1 && first.allSatisfy { $0.hasCallback && $0.hasNT && $0.timeout == "Second-3" }, "\(first)")
            }

            // Five renewals of each (one each 1.5 s): well past two timeouts after the subscriptions were made.
            try await bed.harness.waitUntil("renewed five times each", seconds: 30) {
                Self.eventPaths.allSatisfy { path in tap.requests.filter { $0.method == "SUBSCRIBE" && $0.path == path && $0.sid != nil }.count >= 5 }
            }
            for path in Self.eventPaths {
                let subscribes = tap.requests.filter { $0.method == "SUBSCRIBE" && $0.path == path && $0.timeout != "Second-2" }
                let renewals = subscribes.dropFirst()
                #expect(renewals.allSatisfy { $0.sid.map(sids.contains) == true && !$0.hasCallback && !$0.hasNT && $0.timeout == "Second-3" }, "\(renewals)")
                // Each before the last one's 3 s were up.
                let gaps = zip(subscribes, subscribes.dropFirst()).map { $1.at - $0.at }
                #expect(gaps.allSatisfy { $0 < 3 }, "\(gaps)")
                #expect((subscribes.last?.at ?? 0) - (subscribes.first?.at ?? 0) > 6)
            }
            // gmediarender forgot the subscription nobody renewed.
            let renewedByHand = try await bed.gena("SUBSCRIBE", renderer, service: "RenderingControl", headers: ["SID: \(handMadeSID)", "TIMEOUT: Second-2"])
            #expect(renewedByHand.status == 412)

            // Another control point turns the volume up: the system hears it through our events.
            let notifiedBefore = tap.requests.count
            _ = try await bed.controlPoint(renderer, service: "RenderingControl", "SetVolume", [("InstanceID", "0"), ("Channel", "Master"), ("DesiredVolume", "70")])
            try await bed.harness.waitUntil("the system hears 0.7") { await bed.supervisor.activeRoutes().first?.volume == 0.7 }
            let events = tap.requests.dropFirst(notifiedBefore).filter { $0.method == "NOTIFY" }
            #expect(events.contains { $0.sid.map(sids.contains) == true && ($0.seq ?? 0) > 0 }, "\(events)")
            #expect(tap.sinkNotifications == [handMadeSID], "the expired subscription was evented: \(tap.sinkNotifications)")
        }
    }

    /// A renderer that reboots at the same address while its route is idle (killed: no byebye)
    /// has forgotten our subscriptions: the next renewal is refused (412; or unanswered, when it
    /// falls while the renderer is down), the driver subscribes afresh (CALLBACK and NT again),
    /// says so, and the renderer's events reach the system again.
    @Test func aRendererThatForgotOurSubscriptionsIsSubscribedAfresh() async throws {
        try await DLNATestBed.run(environment: ["MEDIAROUTE_DLNA_EVENT_SECONDS": "3", "MEDIAROUTE_DLNA_IDLE_CHECK_SECONDS": "3600"]) { bed in
            let renderer = try await bed.addRenderer("Cellar Speaker")
            let tap = try await bed.wireTap(on: renderer)
            try await route(bed, "Cellar Speaker")
            try await bed.harness.waitUntil("both services evented to us") { ourSIDs(tap).count == 2 }
            let first = ourSIDs(tap)
            await renderer.kill()
            try await renderer.restart()
            try await bed.harness.waitUntil("subscribed afresh to both services", seconds: 10) { ourSIDs(tap).subtracting(first).count == 2 }
            let fresh = ourSIDs(tap).subtracting(first)
            let resubscriptions = tap.requests.filter { $0.method == "SUBSCRIBE" && $0.sid == nil }.dropFirst(2)
            #expect(Set(resubscriptions.map(\.path)) == Set(Self.eventPaths))
            #expect(resubscriptions.allSatisfy { $0.hasCallback && $0.hasNT && $0.timeout == "Second-3" }, "\(resubscriptions)")
            // Refused (412) once it is back, or unanswered if a renewal fell while it was down. The
            // driver's log line comes through its stderr and the supervisor: it may follow the requests.
            try await bed.harness.waitUntil("the driver says it subscribes again") {
                bed.harness.log.all.contains { $0.contains("Cellar Speaker: renewing the event subscription failed") && $0.contains("subscribing again") }
            }
            #expect(await bed.supervisor.activeRoutes().count == 1)

            let before = tap.requests.count
            _ = try await bed.controlPoint(renderer, service: "RenderingControl", "SetVolume", [("InstanceID", "0"), ("Channel", "Master"), ("DesiredVolume", "40")])
            try await bed.harness.waitUntil("the system hears 0.4") { await bed.supervisor.activeRoutes().first?.volume == 0.4 }
            #expect(tap.requests.dropFirst(before).contains { $0.method == "NOTIFY" && $0.sid.map(fresh.contains) == true })
        }
    }

    /// A renderer down for longer than a renewal is polled meanwhile; once it is back, the next
    /// try subscribes again and polling stops: events carry its changes again.
    @Test func eventsComeBackAfterARendererWasDownThroughARenewal() async throws {
        try await DLNATestBed.run(environment: ["MEDIAROUTE_DLNA_EVENT_SECONDS": "3", "MEDIAROUTE_DLNA_IDLE_CHECK_SECONDS": "3600"]) { bed in
            let renderer = try await bed.addRenderer("Loft Speaker")
            let tap = try await bed.wireTap(on: renderer)
            try await route(bed, "Loft Speaker")
            try await bed.harness.waitUntil("both services evented to us") { ourSIDs(tap).count == 2 }
            let first = ourSIDs(tap)
            await renderer.kill()
            try await bed.harness.waitUntil("polling while it is down") { bed.harness.log.all.contains { $0.contains("Loft Speaker: events unavailable") && $0.contains("polling its state") } }
            try await renderer.restart()
            try await bed.harness.waitUntil("events back", seconds: 15) { bed.harness.log.contains("Loft Speaker: events are back: polling stops") }
            try await bed.harness.waitUntil("subscribed afresh to both services") { ourSIDs(tap).subtracting(first).count == 2 }
            let before = tap.requests.count
            _ = try await bed.controlPoint(renderer, service: "RenderingControl", "SetVolume", [("InstanceID", "0"), ("Channel", "Master"), ("DesiredVolume", "30")])
            try await bed.harness.waitUntil("the system hears 0.3") { await bed.supervisor.activeRoutes().first?.volume == 0.3 }
            #expect(tap.requests.dropFirst(before).contains { $0.method == "NOTIFY" && $0.sid.map { !first.contains($0) } == true })
        }
    }

    /// Deactivation sends UNSUBSCRIBE for each subscription; the renderer has forgotten them
    /// (renewing one is refused) and a volume change is evented to the test's own subscription
    /// but not to us.
    @Test func deactivationCancelsTheSubscriptions() async throws {
        try await DLNATestBed.run { bed in
            let renderer = try await bed.addRenderer("Porch Speaker")
            let tap = try await bed.wireTap(on: renderer)
            try await route(bed, "Porch Speaker")
            try await bed.harness.waitUntil("both services evented to us") { ourSIDs(tap).count == 2 }
            let sids = ourSIDs(tap)
            try await bed.supervisor.deactivate("Porch Speaker")
            try await bed.harness.waitUntil("UNSUBSCRIBE for each subscription") {
                Set(tap.requests.filter { $0.method == "UNSUBSCRIBE" }.compactMap(\.sid)) == sids
            }
            let cancellations = tap.requests.filter { $0.method == "UNSUBSCRIBE" }
            #expect(Set(cancellations.map(\.path)) == Set(Self.eventPaths))
            #expect(cancellations.allSatisfy { !$0.hasCallback && !$0.hasNT }, "\(cancellations)")
            for cancellation in cancellations {
                let service = cancellation.path.hasSuffix("rendertransport1") ? "AVTransport" : "RenderingControl"
                let renewal = try await bed.gena("SUBSCRIBE", renderer, service: service, headers: ["SID: \(cancellation.sid ?? "")", "TIMEOUT: Second-60"])
                #expect(renewal.status == 412, "\(service) still knows our subscription")
            }

            let handMade = try await bed.gena("SUBSCRIBE", renderer, service: "RenderingControl",
                                              headers: ["CALLBACK: <\(tap.sinkURL)>", "NT: upnp:event", "TIMEOUT: Second-60"])
            let handMadeSID = try #require(handMade.sid)
            try await bed.harness.waitUntil("the test's subscription has its first event") { tap.sinkNotifications.count == 1 }
            let before = tap.requests.count
            _ = try await bed.controlPoint(renderer, service: "RenderingControl", "SetVolume", [("InstanceID", "0"), ("Channel", "Master"), ("DesiredVolume", "70")])
            try await bed.harness.waitUntil("the change is evented to the test's subscription") { tap.sinkNotifications.count == 2 }
            #expect(tap.sinkNotifications == [handMadeSID, handMadeSID])
            let ours = tap.requests.dropFirst(before).filter { $0.method == "NOTIFY" }
            #expect(ours.isEmpty, "NOTIFYs still sent to us after deactivation: \(ours)")
        }
    }

    /// A renderer that refuses SUBSCRIBE (HTTP 501) is polled, the log says so, and a volume
    /// changed by another control point still reaches the system.
    @Test func aRendererRefusingEventsIsPolled() async throws {
        try await DLNATestBed.run { bed in
            let host = try await bed.network.addHost()
            let refusing = try HostileRenderer.start(on: host, network: bed.network, mode: "plain", name: "Mute Box", directory: bed.harness.root)
            defer { Task { await refusing.stop() } }
            try await route(bed, "Mute Box")
            try await bed.harness.waitUntil("polling is logged") {
                bed.harness.log.all.contains { $0.contains("Mute Box: events unavailable") && $0.contains("HTTP 501") && $0.contains("polling its state every second instead") }
            }
            let body = "<?xml version=\"1.0\"?><s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\"><s:Body>"
                + "<u:SetVolume xmlns:u=\"urn:schemas-upnp-org:service:RenderingControl:1\"><InstanceID>0</InstanceID><Channel>Master</Channel>"
                + "<DesiredVolume>70</DesiredVolume></u:SetVolume></s:Body></s:Envelope>"
            let set = try await bed.network.run(["/usr/bin/curl", "-sS", "--max-time", "5", "-H", "Content-Type: text/xml; charset=\"utf-8\"",
                                                 "-H", "SOAPACTION: \"urn:schemas-upnp-org:service:RenderingControl:1#SetVolume\"",
                                                 "--data-binary", body, "http://\(host.address):49600/control/RenderingControl"], in: bed.network.controllerNamespace)
            #expect(set.termination == .exited(0), "\(set.standardError)")
            try await bed.harness.waitUntil("the system hears 0.7 by polling", seconds: 10) { await bed.supervisor.activeRoutes().first?.volume == 0.7 }
        }
    }
}
