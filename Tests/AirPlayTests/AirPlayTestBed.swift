import AVSystemRouting
import Foundation
import MediaRouteIPC
@testable import MediaRouteSupervisor
import PrivateDaemons
import TestSupport

/// A real shairport-sync (its audio read back from its pipe output) announced through a private
/// Avahi daemon, and the supervisor running the AirPlay driver against that Avahi, serving apps
/// on its socket.
final class AirPlayTestBed: Sendable {
    static let name = "Kitchen Speaker"
    static let protocolID = "org.mediaroute.airplay"
    let harness: SupervisorHarness
    let receiver: PrivateAirPlayReceiver
    let apps: AppControllers
    private let server: ControlServer
    var supervisor: Supervisor { harness.supervisor }

    /// Runs `body` with the receiver listed in a picker (opened for that and closed again), and
    /// always tears everything down.
    static func run(password: String? = nil, _ body: (AirPlayTestBed) async throws -> Void) async throws {
        let receiver = try await PrivateAirPlayReceiver.start(name: name, password: password)
        let harness: SupervisorHarness
        do { harness = try SupervisorHarness() } catch {
            await receiver.stop()
            throw error
        }
        try await withTearDown {
            let manifest: JSONValue = [
                "protocol": .string(protocolID),
                "exportedType": ["identifier": .string(protocolID), "conformsTo": ["public.media-sharing-protocol"], "description": "AirPlay"],
                "executable": .string(Executables.sibling("mediaroute-airplay-driver")),
                "environment": ["DBUS_SYSTEM_BUS_ADDRESS": .string(receiver.busAddress), "SWIFT_BACKTRACE": "enable=no"],
                "timeouts": ["requestMilliseconds": 15000],
            ]
            try Data(JSONWriter.encode(manifest)).write(to: URL(fileURLWithPath: harness.drivers + "/airplay.json"))
            let socket = harness.root + "/mediarouted.sock"
            let bed = AirPlayTestBed(harness: harness, receiver: receiver, apps: AppControllers(socket: socket),
                                     server: try await harness.startServing(at: socket))
            defer { bed.server.close() }
            let view = PickerView()
            let picker = await bed.supervisor.openPicker { view.update($0) }
            try await harness.waitForPicker(view, [name])
            await bed.supervisor.closePicker(picker.id)
            try await withTearDown { try await body(bed) } tearDown: { await bed.apps.invalidateAll() }
        } tearDown: {
            await harness.tearDown()
            await receiver.stop()
        }
    }

    private init(harness: SupervisorHarness, receiver: PrivateAirPlayReceiver, apps: AppControllers, server: ControlServer) {
        self.harness = harness
        self.receiver = receiver
        self.apps = apps
        self.server = server
    }

    /// Plays a 441 Hz tone of `seconds` from a file on the active receiver (played here: a receiver fetches nothing).
    func playTone(seconds: Double, title: String = "Tone") async throws {
        let tone = harness.root + "/tone.wav"
        try await MediaFileServer.makeTone(at: tone, seconds: seconds, frequency: 441, title: title)
        _ = try await supervisor.startSession(Self.name, url: URL(fileURLWithPath: tone).absoluteString)
    }

    /// Bytes of one second of the receiver's output (44.1 kHz, stereo, 16-bit).
    static let second = 44_100 * 4

    /// Waits until `seconds` more of audio came out than `from` bytes, and returns its last second.
    func lastSecond(after from: Int, seconds: Int) async throws -> [Int16] {
        try await harness.waitUntil("\(seconds) s of audio at the receiver", seconds: 20) { receiver.audioBytes - from > seconds * Self.second }
        return receiver.audio(from: receiver.audioBytes - Self.second)
    }

    /// The RMS of the left channel.
    static func level(_ interleaved: [Int16]) -> Double {
        let left = ToneAnalysis.channel(0, of: interleaved, channels: 2)
        return (left.reduce(0) { $0 + $1 * $1 } / Double(max(left.count, 1))).squareRoot()
    }
}
