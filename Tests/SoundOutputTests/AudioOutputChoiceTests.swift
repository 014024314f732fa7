import Foundation
import SoundOutput
import Testing
import TestSupport

/// What `--audio-output auto` finds, on environments and runtime directories made for it.
@Suite("Sound output: what auto finds", .onAThreadOfItsOwn)
struct AudioOutputChoiceTests {
    @Test func autoTakesAPulseServerThenAPipeWireServer() throws {
        let runtime = NSTemporaryDirectory() + "mediaroute-runtime-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: runtime + "/pulse", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: runtime) }
        // Nothing there: a card if the machine has one, else nowhere.
        let bare = AudioOutputChoice.auto.resolved(environment: ["XDG_RUNTIME_DIR": runtime])
        let cards = ((try? FileManager.default.contentsOfDirectory(atPath: "/dev/snd")) ?? []).contains { $0.hasPrefix("pcmC") && $0.hasSuffix("p") }
        #expect(bare == (cards ? .alsa : .null))
        // PULSE_SERVER names a server, wherever it is.
        #expect(AudioOutputChoice.auto.resolved(environment: ["XDG_RUNTIME_DIR": runtime, "PULSE_SERVER": "unix:/elsewhere"]) == .pulse)
        // PipeWire's socket, then PulseAudio's (which pipewire-pulse answers too) before it.
        #expect(FileManager.default.createFile(atPath: runtime + "/pipewire-0", contents: nil))
        #expect(AudioOutputChoice.auto.resolved(environment: ["XDG_RUNTIME_DIR": runtime]) == .pipewire)
        #expect(FileManager.default.createFile(atPath: runtime + "/pulse/native", contents: nil))
        #expect(AudioOutputChoice.auto.resolved(environment: ["XDG_RUNTIME_DIR": runtime]) == .pulse)
        // A choice other than auto stands.
        #expect(AudioOutputChoice.null.resolved(environment: ["PULSE_SERVER": "unix:/elsewhere"]) == .null)
    }

    @Test func pipeWiresSocketIsWhereItsClientsLook() {
        #expect(AudioOutputChoice.pipeWireSocket(environment: ["XDG_RUNTIME_DIR": "/run/user/7"]) == "/run/user/7/pipewire-0")
        #expect(AudioOutputChoice.pipeWireSocket(environment: ["XDG_RUNTIME_DIR": "/run/user/7", "PIPEWIRE_RUNTIME_DIR": "/tmp/pw"]) == "/tmp/pw/pipewire-0")
        #expect(AudioOutputChoice.pipeWireSocket(environment: ["XDG_RUNTIME_DIR": "/run/user/7", "PIPEWIRE_REMOTE": "pipewire-1"]) == "/run/user/7/pipewire-1")
        #expect(AudioOutputChoice.pipeWireSocket(environment: ["XDG_RUNTIME_DIR": "/run/user/7", "PIPEWIRE_REMOTE": "/tmp/elsewhere"]) == "/tmp/elsewhere")
    }

    @Test func eachOutputNamesWhereItPlays() {
        #expect(AudioOutputChoice.pulse.device() == "pulse")
        #expect(AudioOutputChoice.pipewire.device() == nil)
        #expect(AudioOutputChoice.pipewire.destination() == "a PipeWire stream")
        #expect(AudioOutputChoice.pulse.destination() == "ALSA device \"pulse\"")
        #expect(AudioOutputChoice.null.destination() == nil)
        #expect(AudioOutputChoice.alsa.device(alsaDevice: "plughw:1") == "plughw:1")
        #expect(AudioOutputChoice.null.device() == nil)
    }

    @Test func theNullOutputTakesSamplesAtACardsPace() throws {
        let sink = ClockPacedSink(sampleRate: 48_000, channels: 2)
        let period = [Float](repeating: 0, count: 480 * 2)
        let start = ContinuousClock.now
        for _ in 0..<20 { try period.withUnsafeBufferPointer { try sink.write($0) } }
        let elapsed = ContinuousClock.now - start
        // 20 × 10 ms, each returning when a card would have taken it.
        #expect(elapsed >= .milliseconds(190) && elapsed < .milliseconds(400), "\(elapsed)")
    }
}
