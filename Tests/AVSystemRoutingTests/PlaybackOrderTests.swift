@testable import AVSystemRouting
import Foundation
import MediaDevice
import Testing

/// The app's mirror never goes back in time: reports arrive on a task of their own and can be read
/// after the answer to a later command, or while a command is on its way to the device.
@Suite("AVSystemRouting: the order of playback reports")
@MainActor
struct PlaybackOrderTests {
    /// A mirror whose daemon is not there: its commands fail, reports are fed by hand.
    func mirror() -> AVSystemRoutePlaybackControl {
        let daemon = DaemonConnection(socketPath: "/nonexistent/mediarouted.sock", applicationIdentifier: "org.test.order",
                                      supportedProtocols: ["org.test.alpha"])
        var playing = PlaybackStatus()
        playing.isPlaying = true
        playing.state = .playing
        return AVSystemRoutePlaybackControl(session: "s1", playback: SessionPlayback(status: playing, revision: 0), daemon: daemon)
    }

    func state(playing: Bool, position: Double, revision: Int64) -> SessionPlayback {
        var status = PlaybackStatus()
        status.isPlaying = playing
        status.state = playing ? .playing : .paused
        status.position = position
        return SessionPlayback(status: status, revision: revision)
    }

    @Test func aStateOlderThanTheOneShownIsDropped() {
        let control = mirror()
        control.report(state(playing: true, position: 5, revision: 7))
        #expect(control.currentPlaybackPosition == 5)
        control.report(state(playing: true, position: 4, revision: 6))
        #expect(control.currentPlaybackPosition == 5, "a report that was overtaken must not rewind the mirror")
        control.report(state(playing: true, position: 6, revision: 7))
        #expect(control.currentPlaybackPosition == 6, "the same revision again (the set's own notification) is shown")
        control.report(state(playing: false, position: 6.5, revision: 8))
        #expect(control.state == .paused && control.currentPlaybackPosition == 6.5)
    }

    @Test func reportsWaitWhileACommandIsOnItsWay() async {
        let control = mirror()
        control.report(state(playing: true, position: 1, revision: 1))
        control.isPlaying = false
        // Made by the device before it saw the pause: showing it would flip the mirror back to playing.
        control.report(state(playing: true, position: 1.2, revision: 2))
        #expect(control.state == .paused)
        await #expect(throws: (any Error).self) { try await control.synchronize() }  // no daemon: the command failed
        control.report(state(playing: true, position: 1.4, revision: 3))
        #expect(control.state == .playing, "once the command was answered, the device's word counts again")
    }
}
