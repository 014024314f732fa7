@testable import MediaDevice
import MediaRouteIPC
import Testing

@Suite("MediaDevice SDK types")
struct MediaOutputDeviceTests {
    @Test func aValidDeviceRoundTripsThroughTheWire() throws {
        let device = try #require(MediaOutputDevice(id: "5B5A-01", displayName: "Living Room TV", capabilities: [.urlPlayback, .realtimeAudioStreaming],
                                                    deviceType: .tv, volumeControl: .absolute, canMute: true,
                                                    requiredNetworkEndpoints: [.init(host: "10.231.0.2", port: 7000)]))
        let decoded = try MediaOutputDevice(json: device.json)
        #expect(decoded == device)
        #expect(device.json.objectValue?["capabilities"] == ["urlPlayback", "realtimeAudioStreaming"])
    }

    @Test(arguments: [
        ("", "TV", MediaOutputDevice.Capabilities.urlPlayback, [MediaOutputDevice.NetworkEndpoint]()),
        ("id", "", .urlPlayback, []),
        ("id", "   ", .urlPlayback, []),
        ("id", "Bad\u{07}Name", .urlPlayback, []),
        ("id", String(repeating: "x", count: 129), .urlPlayback, []),
        ("id", "TV", MediaOutputDevice.Capabilities(), []),
        ("id", "TV", .urlPlayback, [.init(host: "", port: 80)]),
        ("id", "TV", .urlPlayback, [.init(host: "h", port: 0)]),
    ])
    func theFailableInitializerRejectsInvalidInput(_ id: String, _ name: String, _ capabilities: MediaOutputDevice.Capabilities,
                                                   _ endpoints: [MediaOutputDevice.NetworkEndpoint]) {
        #expect(MediaOutputDevice(id: id, displayName: name, capabilities: capabilities, requiredNetworkEndpoints: endpoints) == nil)
    }

    @Test func wireErrorsNameTheMember() {
        #expect(throws: MediaDeviceError(.invalidDevice, "invalid device: unknown \"deviceType\"; expected one of tv, speaker, headphones, bluetoothSpeaker, receiver, setTopBox, computer, unknown")) {
            try MediaOutputDevice(json: ["id": "a", "displayName": "A", "capabilities": ["urlPlayback"], "deviceType": "toaster"])
        }
        #expect(throws: MediaDeviceError.self) { try MediaOutputDevice(json: ["id": "a", "displayName": "A", "capabilities": ["teleport"]]) }
    }

    @Test func authorizationMethodsAndErrorsRoundTrip() {
        for method in [MediaOutputDevice.AuthorizationMethod.numericCode(length: .sixCharacter), .password, .none] {
            #expect(MediaOutputDevice.AuthorizationMethod(json: method.json) == method)
        }
        let error = MediaDeviceError(.authorizationFailed, "wrong code")
        #expect(MediaDeviceError(json: error.json) == error)
        #expect(MediaDeviceError(rpcError: error.rpcError) == error)
        #expect(MediaDeviceError(.connectionFailed).message == "could not connect to the device")
    }

    @Test func protocolTypesMustBeReverseDNS() {
        #expect(UTType(exportedAs: "org.mediaroute.reference").isWellFormed)
        #expect(!UTType(exportedAs: "reference").isWellFormed)
        #expect(!UTType(exportedAs: "org..x").isWellFormed)
        #expect(!UTType(exportedAs: "org.media route").isWellFormed)
    }
}
