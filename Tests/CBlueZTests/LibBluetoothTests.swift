import CBlueZ
import Testing

@Suite("libbluetooth addresses")
struct LibBluetoothTests {
    @Test(arguments: ["AA:BB:CC:00:00:01", "00:1A:7D:DA:71:13", "FF:FF:FF:FF:FF:FF"])
    func addressRoundTrip(_ text: String) {
        var address = bdaddr_t()
        #expect(str2ba(text, &address) == 0)
        var buffer = [CChar](repeating: 0, count: 18)
        #expect(ba2str(&address, &buffer) == 17)
        #expect(buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) } == text)
    }

    /// bdaddr_t is little-endian: the last octet of the text is the first byte in memory.
    @Test func byteOrder() {
        var address = bdaddr_t()
        _ = str2ba("01:02:03:04:05:06", &address)
        #expect(address.b.0 == 0x06)
        #expect(address.b.5 == 0x01)
    }

    @Test(arguments: ["AA:BB:CC", "GG:BB:CC:00:00:01", "AA-BB-CC-00-00-01"])
    func rejectsMalformedAddress(_ text: String) {
        var address = bdaddr_t()
        #expect(str2ba(text, &address) < 0)
    }
}
