import AVSystemRouting
import DBus
import Foundation
import MediaDevice
@testable import MediaRouteSupervisor
import MediaRouteWire
import PrivateDaemons
import Testing
import TestSupport

/// The AirPlay driver under the supervisor, against a real shairport-sync.
@Suite("AirPlay: shairport-sync receivers", .serialized, .onAThreadOfItsOwn)
struct AirPlayDriverTests {
    @Test func aReceiverIsListedPlaysAURLAndKeepsItsVolume() async throws {
        try await AirPlayTestBed.run { bed in
            let name = AirPlayTestBed.name
            let entry = try #require(await bed.supervisor.pickerEntries().first { $0.name == name })
            let device = try #require(entry.routes.first?.device)
            #expect(device.id.hasPrefix("airplay:") && device.deviceType == .speaker && device.volumeControl == .absolute)
            _ = try await bed.supervisor.activate(name) { _ in nil }

            // A 441 Hz tone played here (a receiver fetches nothing) reaches its output cleanly,
            // after about 2 s of AirPlay latency.
            let start = bed.receiver.audioBytes
            try await bed.playTone(seconds: 12, title: "Kitchen Tone")
            let loud = try await bed.lastSecond(after: start, seconds: 4)
            let snr = ToneFit.snr(loud, channels: 2, sampleRate: 44_100, frequency: 441, skipSeconds: 0)
            #expect(snr >= 30, "SNR \(snr) dB")
            // Its title reached the receiver (shairport-sync shows it in its MPRIS metadata).
            let mpris = try await CapturedCommand.run("/usr/bin/busctl", ["--address=\(bed.receiver.busAddress)", "get-property", "org.mpris.MediaPlayer2.ShairportSync",
                                                                          "/org/mpris/MediaPlayer2", "org.mpris.MediaPlayer2.Player", "Metadata"], timeout: .seconds(5))
            #expect(mpris.output.contains("Kitchen Tone"), "\(mpris.output)")

            // Half volume is -15 dB on AirPlay's scale: 0.178 of the level, once the receiver's
            // buffer has played out.
            _ = try await bed.supervisor.volume(name, .set(0.5))
            let quiet = try await bed.lastSecond(after: bed.receiver.audioBytes, seconds: 3)
            let ratio = AirPlayTestBed.level(quiet) / AirPlayTestBed.level(loud)
            #expect(abs(ratio - 0.1778) < 0.02, "level ratio \(ratio)")
            // shairport-sync asks our remote for `getproperty` every few seconds; the 400 it gets
            // (this remote is a plain one) is logged once, not each time.
            #expect(bed.harness.log.all.filter { $0.contains("getproperty") }.count <= 1, "\(bed.harness.log.all.filter { $0.contains("getproperty") })")
            try await bed.supervisor.stopSession(name)
            try await bed.supervisor.deactivate(name)

            // The volume is kept for the next activation (a speaker never comes back at full volume).
            _ = try await bed.supervisor.activate(name) { _ in nil }
            #expect(try await bed.supervisor.volume(name, .get).volume == 0.5)
        }
    }

    @Test func aURLPausesAndResumesWhereItWas() async throws {
        try await AirPlayTestBed.run { bed in
            let name = AirPlayTestBed.name
            _ = try await bed.supervisor.activate(name) { _ in nil }
            try await bed.playTone(seconds: 30)
            _ = try await bed.lastSecond(after: bed.receiver.audioBytes, seconds: 8)
            let paused = try await bed.supervisor.setPlayback(name, PlaybackChanges(isPlaying: false))
            #expect(paused.playback?.status.state == .paused)
            let read = try #require(paused.playback?.status.position)
            // The receiver drops the ~2 s it held and had not played (FLUSH): the URL goes back
            // by as much, so resuming skips nothing the person did not hear.
            func position() async -> Double { await bed.supervisor.activeRoutes().first?.playback?.status.position ?? .infinity }
            try await bed.harness.waitUntil("the position went back by what the receiver had not played") { await position() < read - 1.5 }
            let rewound = await position()
            #expect(rewound > read - 2.6, "position \(rewound) after pausing with \(read) read")
            let resumed = try await bed.supervisor.setPlayback(name, PlaybackChanges(isPlaying: true))
            #expect(resumed.playback?.status.isPlaying == true)
            // The receiver's 2 s of buffering and the sender's lead-in come first.
            let heard = try await bed.lastSecond(after: bed.receiver.audioBytes, seconds: 5)
            let snr = ToneFit.snr(heard, channels: 2, sampleRate: 44_100, frequency: 441, skipSeconds: 0)
            #expect(snr >= 30, "SNR \(snr) dB")
            // Played on from there (from the start it would be at less than the 5 s since).
            #expect(await position() > rewound, "position after resuming from \(rewound)")
        }
    }

    /// A seek drops what the receiver held from before it (FLUSH): of the first tone no more than
    /// half a second plays after the seek, where the ~2 s the receiver buffers would without it,
    /// and the tone at the new position follows.
    @Test func aSeekDropsWhatTheReceiverHeldFromBeforeIt() async throws {
        try await AirPlayTestBed.run { bed in
            let name = AirPlayTestBed.name
            _ = try await bed.supervisor.activate(name) { _ in nil }
            let file = bed.harness.root + "/two-tones.wav"
            try await MediaFileServer.makeTones(at: file, [(441, 10), (882, 10)], title: "Two Tones")
            let start = bed.receiver.audioBytes
            _ = try await bed.supervisor.startSession(name, url: URL(fileURLWithPath: file).absoluteString)
            _ = try await bed.lastSecond(after: start, seconds: 2)
            let mark = bed.receiver.audioBytes
            _ = try await bed.supervisor.setPlayback(name, PlaybackChanges(position: 12))
            /// The tone of each tenth of a second the receiver played since the seek (0: quiet).
            func tenths() -> [Double] {
                let left = ToneAnalysis.channel(0, of: bed.receiver.audio(from: mark), channels: 2)
                return stride(from: 0, to: left.count - 4_410 + 1, by: 4_410).map { start in
                    let block = Array(left[start..<(start + 4_410)])
                    return (block.map(abs).max() ?? 0) < 0.05 ? 0 : ToneAnalysis.frequency(of: block, sampleRate: 44_100)
                }
            }
            func isTone(_ frequency: Double) -> (Double) -> Bool { { abs($0 - frequency) < 20 } }
            try await bed.harness.waitUntil("a second of the tone sought to", seconds: 20) { tenths().filter(isTone(882)).count >= 10 }
            let heard = tenths()
            let before = heard.prefix { !isTone(882)($0) }.filter(isTone(441)).count
            print("AirPlay seek: tenths of a second after it, by tone: \(heard.map { Int($0) })")
            #expect(before <= 5, "\(before) tenths of the first tone played after the seek: \(heard.map { Int($0) })")
        }
    }

    /// A URL played to its end is heard to its end: the ~2 s the receiver holds when the source
    /// runs out are played out, not flushed.
    @Test func aTrackIsHeardToItsEnd() async throws {
        try await AirPlayTestBed.run { bed in
            let name = AirPlayTestBed.name
            _ = try await bed.supervisor.activate(name) { _ in nil }
            let start = bed.receiver.audioBytes
            try await bed.playTone(seconds: 3)
            try await bed.harness.waitUntil("the session ended") { await bed.supervisor.activeRoutes().first?.playback?.status.state == .ended }
            /// How long the tone lasted in what the receiver played since `start`: its first loud
            /// sample to its last.
            func toneSeconds() -> Double {
                let left = ToneAnalysis.channel(0, of: bed.receiver.audio(from: start), channels: 2)
                guard let first = left.firstIndex(where: { abs($0) > 0.05 }), let last = left.lastIndex(where: { abs($0) > 0.05 }) else { return 0 }
                return Double(last - first) / 44_100
            }
            try await bed.harness.waitUntil("all 3 s of the tone heard", seconds: 10) { toneSeconds() > 2.9 }
        }
    }

    @Test func theReceiversOwnRemoteReachesThePlaybackAndTheVolume() async throws {
        try await AirPlayTestBed.run { bed in
            let name = AirPlayTestBed.name
            _ = try await bed.supervisor.activate(name) { _ in nil }
            try await bed.playTone(seconds: 30)
            // shairport-sync's remote control (its D-Bus interface) sends DACP to our server once
            // it has found it by the session's DACP-ID.
            let bus = try await DBusConnection.connect(address: bed.receiver.busAddress)
            try await withTearDown {
                let (destination, path, remote) = ("org.gnome.ShairportSync", DBusObjectPath("/org/gnome/ShairportSync"), "org.gnome.ShairportSync.RemoteControl")
                try await bed.harness.waitUntil("the receiver found our remote-control server") {
                    (try? await bus.property("Available", of: remote, at: path, on: destination).bool) == true
                }
                func state() async -> AVInterfacePlaybackState? { await bed.supervisor.activeRoutes().first?.playback?.status.state }
                try await bus.call(destination: destination, path: path, interface: remote, method: "Pause", timeout: .seconds(5))
                try await bed.harness.waitUntil("paused from the receiver") { await state() == .paused }
                try await bus.call(destination: destination, path: path, interface: remote, method: "PlayPause", timeout: .seconds(5))
                try await bed.harness.waitUntil("playing again") { await state() == .playing }
                // Its volume set at the receiver: -15 dB is half on our scale, and it is what the route says.
                try await bus.call(destination: destination, path: path, interface: remote, method: "SetAirplayVolume", [.double(-15)], timeout: .seconds(5))
                try await bed.harness.waitUntil("the route has the receiver's volume") {
                    (try? await bed.supervisor.volume(name, .get).volume) == 0.5
                }
            } tearDown: {
                await bus.close()
            }
        }
    }

    @Test func anAppsSamplesAreResampledToTheReceiver() async throws {
        try await AirPlayTestBed.run { bed in
            let app = bed.apps.make(protocols: [AirPlayTestBed.protocolID])
            let observer = ActivatedRouteObserver()
            #expect(app.addObserver(observer))
            _ = try await bed.supervisor.activate(AirPlayTestBed.name) { _ in nil }
            try await bed.harness.waitUntil("the app has the route") { await MainActor.run { observer.route != nil } }
            let route = try #require(await MainActor.run { observer.route })
            let stream = try await route.startAudioStream()
            // 48 kHz from the app, 44.1 kHz at the receiver: 4 s of 1 kHz at half scale in 20 ms
            // records at real-time pace.
            let start = bed.receiver.audioBytes, tone = 1_000.0
            #expect(try await AppTone.write(stream, seconds: 4, frequency: tone))
            let heard = try await bed.lastSecond(after: start, seconds: 4)
            try await stream.stop()
            let snr = ToneFit.snr(heard, channels: 2, sampleRate: 44_100, frequency: tone, skipSeconds: 0)
            #expect(snr >= 30, "SNR \(snr) dB")
        }
    }

    @Test func aPasswordIsAskedOnceRefusedWhenWrongAndRemembered() async throws {
        try await AirPlayTestBed.run(password: "hunter2") { bed in
            let name = AirPlayTestBed.name
            let asked = EventLog<String>()
            let wrong = await #expect(throws: MediaDeviceError.self) {
                _ = try await bed.supervisor.activate(name) { request in
                    asked.append("\(request.method)")
                    return "wrong"
                }
            }
            #expect(wrong?.code == .authorizationFailed, "\(String(describing: wrong))")
            #expect(asked.all == ["password"])
            _ = try await bed.supervisor.activate(name) { _ in
                asked.append("again")
                return "hunter2"
            }
            try await bed.supervisor.deactivate(name)
            // Remembered: no question the third time.
            _ = try await bed.supervisor.activate(name) { _ in
                asked.append("third")
                return nil
            }
            #expect(asked.all == ["password", "again"])
            // Kept where only the driver's user can read it.
            let memory = try #require(FileManager.default.enumerator(atPath: bed.harness.state)?.compactMap { $0 as? String }.first { $0.hasSuffix("receivers.json") })
            let attributes = try FileManager.default.attributesOfItem(atPath: bed.harness.state + "/" + memory)
            #expect((attributes[.posixPermissions] as? Int) == 0o600)
        }
    }

    @Test func aReceiverThatLeavesEndsItsRouteWithTheReason() async throws {
        try await AirPlayTestBed.run { bed in
            let ended = EventLog<(RouteChangeReason, String)>()
            _ = await bed.supervisor.subscribe { event in
                if case .deactivated(_, let reason, let message) = event { ended.append((reason, message)) }
            }
            _ = try await bed.supervisor.activate(AirPlayTestBed.name) { _ in nil }
            await bed.receiver.switchOff()
            try await bed.harness.waitUntil("the route ended") { ended.all.count == 1 }
            let (reason, message) = try #require(ended.all.first)
            #expect(reason == .oldDeviceUnavailable)
            // Switched off, shairport-sync closes the session's connection, which is noticed first;
            // its announcement withdrawn ends the route after a grace when the connection stays.
            #expect(message.contains(AirPlayTestBed.name) && (message.contains("left") || message.contains("closed its connection")), "\(message)")
            #expect(await bed.supervisor.activeRoutes().isEmpty)
        }
    }

    /// A receiver that crashes (SIGKILL: no goodbye, the kernel resets its connection) ends its
    /// route at once, saying so, without anything playing; once it runs again it is listed and
    /// plays after a new activation.
    @Test func aReceiverThatCrashesEndsItsRouteAndPlaysAgainOnceBack() async throws {
        try await AirPlayTestBed.run { bed in
            let name = AirPlayTestBed.name
            let ended = EventLog<(RouteChangeReason, String)>()
            _ = await bed.supervisor.subscribe { event in
                if case .deactivated(_, let reason, let message) = event { ended.append((reason, message)) }
            }
            _ = try await bed.supervisor.activate(name) { _ in nil }
            await bed.receiver.crash()
            try await bed.harness.waitUntil("the route ended") { ended.all.count == 1 }
            let (reason, message) = try #require(ended.all.first)
            #expect(reason == .oldDeviceUnavailable)
            #expect(message.contains(name) && message.contains("closed its connection"), "\(message)")

            try await bed.receiver.switchOn()
            // Listed with a picker open (the driver browsing again), and activated anew.
            let picker = await bed.supervisor.openPicker { _ in }
            try await bed.harness.waitUntil("listed again") { await bed.supervisor.pickerEntries().contains { $0.name == name } }
            _ = try await bed.supervisor.activate(name) { _ in nil }
            await bed.supervisor.closePicker(picker.id)
            let start = bed.receiver.audioBytes
            try await bed.playTone(seconds: 10)
            let heard = try await bed.lastSecond(after: start, seconds: 4)
            let snr = ToneFit.snr(heard, channels: 2, sampleRate: 44_100, frequency: 441, skipSeconds: 0)
            #expect(snr >= 30, "SNR \(snr) dB")
        }
    }
}
