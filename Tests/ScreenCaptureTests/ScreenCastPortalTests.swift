import DBus
import Foundation
import PrivateDaemons
import ScreenCapture
import Testing

/// The ScreenCast portal conversation against the real xdg-desktop-portal on a private session bus.
/// Its backend here is xdg-desktop-portal-wlr under a headless sway: it gets as far as Start, which
/// fails on these machines (no GPU: the backend needs a DMA-BUF format for wlroots' screencopy
/// version 3), so Start's failure is what is checked, as the sentence a person reads. A Start that
/// succeeds cannot run here: GNOME's backend asks a person in a dialog, wlr's needs DMA-BUF.
@Suite("The ScreenCast portal conversation", .serialized, .timeLimit(.minutes(3)))
struct ScreenCastPortalTests {
    private func onDesktop(withScreenCastBackend backend: Bool, _ body: (PrivateSwayDesktop, DBusConnection) async throws -> Void) async throws {
        let desktop = try await PrivateSwayDesktop.start(withScreenCastBackend: backend)
        try await withTearDown {
            let connection = try await DBusConnection.connect(address: desktop.bus.address)
            try await withTearDown { try await body(desktop, connection) } tearDown: { await connection.close() }
        } tearDown: {
            await desktop.stop()
        }
        for pid in desktop.pids { #expect(kill(pid, 0) != 0, "process \(pid) is gone") }
        #expect(!FileManager.default.fileExists(atPath: desktop.directory.path), "the private runtime directory is removed")
    }

    @Test func sessionAndSourcesAreGrantedAndStartsFailureIsASentence() async throws {
        try await onDesktop(withScreenCastBackend: true) { desktop, connection in
            let portal = ScreenCastPortal(connection: connection)
            do {
                #expect(try await portal.version() >= 1)
                try await portal.createSession()
                let session = try #require(await portal.session, "CreateSession answered with a session")
                #expect(session.rawValue.hasPrefix("/org/freedesktop/portal/desktop/session/"))
                try await portal.selectSources()
            } catch {
                Issue.record("\(error)\n\(desktop.logs)")  // the test has failed: what the daemons said is in the message
                return
            }
            do {
                _ = try await portal.start()
                Issue.record("Start succeeded: this machine's portal backend can give a stream after all (update the test and README)")
            } catch {
                #expect("\(error)".hasPrefix("the ScreenCast portal could not start the screencast (response 2"), "\(error)\n\(desktop.logs)")
            }
            await portal.close()
            #expect(await portal.session == nil)
        }
    }

    @Test func closeEndsThePortalsSession() async throws {
        try await onDesktop(withScreenCastBackend: true) { desktop, connection in
            let portal = ScreenCastPortal(connection: connection)
            try await portal.createSession()
            try await portal.selectSources()
            let session = try #require(await portal.session)
            // The session object answers for its own interface (its `version` property) while it is there.
            func sessionVersion() async -> Result<DBusValue, DBusError> {
                do { return .success(try await connection.property("version", of: "org.freedesktop.portal.Session", at: session, on: ScreenCastPortal.busName)) }
                catch { return .failure(error) }
            }
            let before = await sessionVersion()
            #expect((try? before.get())?.uint32 != nil, "the portal's session object is there before Close: \(before)")
            await portal.close()
            // Gone once the portal has handled the Close: asking it then is an unknown object (or
            // method, as GDBus says of a path with nothing exported), not any other failure.
            var after = await sessionVersion()
            let deadline = ContinuousClock.now + .seconds(15)
            while case .success = after, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
                after = await sessionVersion()
            }
            let failure: DBusError? = if case .failure(let error) = after { error } else { nil }
            #expect([DBusError.unknownObject, DBusError.unknownMethod].contains(failure?.name), "Session.Close removed it: \(after)\n\(desktop.logs)")
            #expect(try await connection.nameHasOwner(ScreenCastPortal.busName), "the portal is still running\n\(desktop.logs)")
        }
    }

    @Test func mirrorOnAWaylandDesktopAsksThePortalAndSaysWhyItCouldNotStart() async throws {
        try await onDesktop(withScreenCastBackend: true) { desktop, _ in
            // A Wayland desktop with Xwayland beside it: the portal is asked, not the X display. The
            // screen is asked for before the daemon is reached, so no daemon is needed to see it.
            let mirror = try await CapturedCommand.run(Executables.sibling("mediaroute"), ["--socket", desktop.directory.path + "/none.sock", "mirror", "--to", "Den TV"],
                                                       environment: ["WAYLAND_DISPLAY": "wayland-1", "DISPLAY": ":4242", "DBUS_SESSION_BUS_ADDRESS": desktop.bus.address],
                                                       timeout: .seconds(60))
            #expect(mirror.termination == .exited(1), "\(mirror.output)")
            #expect(mirror.output.contains("the ScreenCast portal could not start the screencast (response 2"), "\(mirror.output)\n\(desktop.logs)")
        }
    }

    @Test func aPortalWithoutScreenCastIsSaid() async throws {
        try await onDesktop(withScreenCastBackend: false) { _, connection in
            let portal = ScreenCastPortal(connection: connection)
            await #expect {
                try await portal.createSession()
            } throws: { error in
                (error as? ScreenCaptureError)?.description.hasPrefix("the desktop portal has no ScreenCast interface") ?? false
            }
        }
    }

    @Test func noPortalOnTheBusIsSaid() async throws {
        let bus = try await PrivateBus.start(kind: .session)
        try await withTearDown {
            let connection = try await DBusConnection.connect(address: bus.address)
            try await withTearDown {
                let portal = ScreenCastPortal(connection: connection)
                await #expect {
                    try await portal.createSession()
                } throws: { error in
                    (error as? ScreenCaptureError)?.description.hasPrefix("there is no xdg-desktop-portal on the session bus") ?? false
                }
            } tearDown: { await connection.close() }
        } tearDown: {
            await bus.stopFromTask()
        }
    }
}
