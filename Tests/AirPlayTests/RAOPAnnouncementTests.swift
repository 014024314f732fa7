import MediaDevice
@testable import mediaroute_airplay_driver
import Testing

/// What a `_raop._tcp` announcement makes of a receiver, and which ones are not listed and why.
struct RAOPAnnouncementTests {
    static let shairport = ["et": "0,1", "cn": "0,1", "ch": "2", "sr": "44100", "ss": "16", "tp": "TCP,UDP", "am": "ShairportSync", "vn": "3"]

    @Test func aSpeakerAnAppleTVAndAPasswordReceiver() throws {
        let speaker = try RAOPAnnouncement(instance: "a0b1c2d3e4f5@Kitchen", host: "10.0.0.9", port: 5000, txt: Self.shairport)
        #expect(speaker.deviceID == "airplay:A0B1C2D3E4F5" && speaker.name == "Kitchen")
        #expect(!speaker.requiresPassword && !speaker.requiresEncryption)
        #expect(speaker.device?.deviceType == .speaker && speaker.device?.capabilities == [.urlPlayback, .realtimeAudioStreaming])

        var appleTV = Self.shairport
        (appleTV["am"], appleTV["et"], appleTV["pw"]) = ("AppleTV3,2", "1", "true")
        let tv = try RAOPAnnouncement(instance: "001122334455@Living Room", host: "10.0.0.7", port: 7000, txt: appleTV)
        #expect(tv.device?.deviceType == .tv && tv.requiresEncryption && tv.requiresPassword)
    }

    @Test func receiversWeCannotStreamToAreRefusedWithTheReason() {
        func refusal(_ change: [String: String], instance: String = "a0b1c2d3e4f5@Den") -> String? {
            do {
                _ = try RAOPAnnouncement(instance: instance, host: "10.0.0.9", port: 5000, txt: Self.shairport.merging(change) { $1 })
                return nil
            } catch {
                return error.message
            }
        }
        #expect(refusal(["et": "0,3,5"]) == nil)  // "none" is there: AirPlay 1 works
        #expect(refusal(["et": "3,5"])?.contains("AirPlay 2 only") == true)
        #expect(refusal(["cn": "2,3"])?.contains("no Apple Lossless") == true)
        #expect(refusal(["sr": "48000"])?.contains("44,100 Hz") == true)
        #expect(refusal(["tp": "TCP"])?.contains("over TCP only") == true)
        #expect(refusal([:], instance: "Den")?.contains("MAC@Name") == true)
        #expect(refusal([:], instance: "zz1122334455@Den")?.contains("MAC@Name") == true)
    }
}
