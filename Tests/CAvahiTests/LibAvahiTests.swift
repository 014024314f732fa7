import CAvahi
import Foundation
import Testing
import PrivateDaemons

@Suite("libavahi-client and libavahi-common")
struct LibAvahiTests {
    /// TXT records carry a device's id, model and capabilities; they must survive the wire format.
    @Test func txtRecordSurvivesSerializeAndParse() throws {
        var list = avahi_string_list_add_pair(nil, "id", "3f2a-living-room")
        list = avahi_string_list_add_pair(list, "caps", "url,audio")
        list = avahi_string_list_add(list, "v=1")
        defer { avahi_string_list_free(list) }

        var wire = [UInt8](repeating: 0, count: 256)
        let length = avahi_string_list_serialize(list, &wire, wire.count)
        #expect(length > 0)
        // DNS TXT wire format: length-prefixed strings, in the order they were added.
        #expect(wire[0] == UInt8("id=3f2a-living-room".utf8.count))
        #expect(String(decoding: wire[1...19], as: UTF8.self) == "id=3f2a-living-room")

        var parsed: UnsafeMutablePointer<AvahiStringList>? = nil
        #expect(avahi_string_list_parse(wire, length, &parsed) == 0)
        defer { avahi_string_list_free(parsed) }
        #expect(avahi_string_list_length(parsed) == 3)

        let item = try #require(avahi_string_list_find(parsed, "id"))
        var key: UnsafeMutablePointer<CChar>? = nil
        var value: UnsafeMutablePointer<CChar>? = nil
        var valueLength = 0
        #expect(avahi_string_list_get_pair(item, &key, &value, &valueLength) == 0)
        defer { avahi_free(key); avahi_free(value) }
        #expect(String(cString: value!) == "3f2a-living-room")
    }

    /// A service-name collision gets the next alternative name ("Speaker" -> "Speaker #2").
    @Test func alternativeServiceName() {
        let next = avahi_alternative_service_name("Living Room")!
        defer { avahi_free(next) }
        #expect(String(cString: next) == "Living Room #2")
    }

    /// With a reachable system bus but no avahi-daemon on it, the client says so precisely. Asked
    /// by a client in a process of its own (avahi-browse): libdbus reads the system bus address once
    /// per process, and a test's own client would fix it for every other test in this one.
    @Test(.timeLimit(.minutes(1)))
    func clientReportsMissingDaemonOnPrivateBus() async throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let browse = try await CapturedCommand.run("/usr/bin/avahi-browse", ["--all", "--terminate"], environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address],
                                                   timeout: .seconds(20))
        #expect(!browse.succeeded)
        #expect(browse.output.contains("Daemon not running"), "\(browse.output)")
    }
}
