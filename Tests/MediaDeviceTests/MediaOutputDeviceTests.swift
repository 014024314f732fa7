@testable import MediaDevice
import MediaRouteIPC
import MediaRouteWire
import Testing

/// Encodes with the typed wire and reads it back, as the two ends of a connection do.
private func roundTrip<T: Codable>(_ value: T) throws -> T { try WireDecoder.decode(T.self, from: WireEncoder.encode(value)) }

@Suite("MediaDevice SDK types")
struct MediaOutputDeviceTests {
    @Test func aValidDeviceRoundTripsThroughTheWire() throws {
        let device = try #require(MediaOutputDevice(id: "5B5A-01", displayName: "Living Room TV", capabilities: [.urlPlayback, .realtimeAudioStreaming],
                                                    deviceType: .tv, volumeControl: .absolute, canMute: true,
                                                    requiredNetworkEndpoints: [.init(host: "10.231.0.2", port: 7000)]))
        #expect(try roundTrip(device) == device)
        let wire: JSONValue = ["id": "5B5A-01", "displayName": "Living Room TV", "capabilities": ["urlPlayback", "realtimeAudioStreaming"],
                               "deviceType": "tv", "volumeControl": "absolute", "canMute": true,
                               "requiredNetworkEndpoints": [["host": "10.231.0.2", "port": 7000]]]
        #expect(WireEncoder.encode(device) == wire)
    }

    @Test(arguments: [
        ("", "TV", MediaOutputDevice.Capabilities.urlPlayback, [MediaOutputDevice.NetworkEndpoint]()),
        ("id", "", .urlPlayback, []),
        ("id", "   ", .urlPlayback, []),
        ("id", "Bad\u{07}Name", .urlPlayback, []),
        ("id", "Bad\u{9B}Name", .urlPlayback, []),
        ("id", "Bad\u{7F}Name", .urlPlayback, []),
        ("bad\u{85}id", "TV", .urlPlayback, []),
        ("id", String(repeating: "x", count: 129), .urlPlayback, []),
        ("id", "TV", MediaOutputDevice.Capabilities(), []),
        ("id", "TV", .urlPlayback, [.init(host: "", port: 80)]),
        ("id", "TV", .urlPlayback, [.init(host: "h", port: 0)]),
    ])
    func theFailableInitializerRejectsInvalidInput(_ id: String, _ name: String, _ capabilities: MediaOutputDevice.Capabilities,
                                                   _ endpoints: [MediaOutputDevice.NetworkEndpoint]) {
        #expect(MediaOutputDevice(id: id, displayName: name, capabilities: capabilities, requiredNetworkEndpoints: endpoints) == nil)
    }

    @Test func namesBeyondASCIIAreTakenAndCountedInCharacters() {
        #expect(MediaOutputDevice(id: "salon-é", displayName: "Téléviseur du séjour 📺", capabilities: .urlPlayback) != nil)
        // 128 characters of two bytes each: 256 bytes, still 128 characters.
        #expect(MediaOutputDevice(id: "id", displayName: String(repeating: "é", count: 128), capabilities: .urlPlayback) != nil)
        #expect(MediaOutputDevice(id: "id", displayName: String(repeating: "é", count: 129), capabilities: .urlPlayback) == nil)
    }

    @Test func wireErrorsNameTheMember() throws {
        func problem(_ json: JSONValue) -> String? {
            do { _ = try WireDecoder.decode(MediaOutputDevice.self, from: json); return nil } catch { return error.description }
        }
        #expect(problem(["id": "a", "displayName": "A", "capabilities": ["urlPlayback"], "deviceType": "toaster"])
            == "\"deviceType\": \"toaster\" is not one of tv, speaker, headphones, bluetoothSpeaker, car, receiver, setTopBox, computer, unknown")
        #expect(problem(["id": "a", "displayName": "A", "capabilities": ["teleport"]])?.hasPrefix("\"capabilities\": ") == true)
        #expect(problem(["id": "a", "displayName": "A", "capabilities": "urlPlayback"]) == "\"capabilities\": expected an array, got a string")
        #expect(problem(["displayName": "A", "capabilities": ["urlPlayback"]]) == "\"id\": missing")
        #expect(problem(["id": "a", "displayName": "A", "capabilities": ["urlPlayback"], "requiredNetworkEndpoints": [["host": "h", "port": 0]]])
            == "\"requiredNetworkEndpoints[0].port\": must be from 1 to 65535")
        // A notification that does not decode is refused with the method and the member, never dropped.
        #expect(throws: RPCError(.invalidParams, "device.found: \"device.displayName\": missing")) {
            try FromDriver.DeviceFound.decode(["device": ["id": "a", "capabilities": ["urlPlayback"]]])
        }
    }

    @Test func numbersTravelAsTheyWereSet() {
        var changes = PlaybackChanges()
        changes.volume = 0.3
        #expect(WireEncoder.encode(changes) == ["volume": 0.3])
        #expect(WireEncoder.encode(ToDriver.GetVolume.Reading(volume: 0.3, muted: false)) == ["volume": 0.3, "muted": false])
        #expect(WireEncoder.encode(ToDriver.Pair(device: MediaOutputDevice(id: "a", displayName: "A", capabilities: .urlPlayback)!, session: "s1", code: nil)).objectValue?["code"] == .null)
    }

    @Test func authorizationMethodsAndErrorsRoundTrip() throws {
        for method in [MediaOutputDevice.AuthorizationMethod.numericCode(length: .sixCharacter), .password, .none] {
            #expect(try roundTrip(method) == method)
        }
        let error = MediaDeviceError(.authorizationFailed, "wrong code")
        #expect(try roundTrip(error) == error)
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
