@testable import MediaRouteIPC
import Testing

@Suite("JSON reader and writer")
struct JSONTests {
    @Test(arguments: [
        #"{"a":1,"b":[true,false,null],"c":"x\"y\\z\n","d":-12.5,"e":{}}"#,
        #"[]"#, #""é😀""#, #"0"#, #"-9223372036854775808"#, #"1.5e-07"#,
    ])
    func canonicalTextRoundTrips(_ text: String) throws {
        let value = try JSONReader.parse(Array(text.utf8))
        #expect(String(decoding: JSONWriter.encode(value), as: UTF8.self) == text)
    }

    @Test func keepsMemberOrderAndIntegerness() throws {
        let value = try JSONReader.parse(Array(#"{"z":1,"a":2.0,"m":3}"#.utf8))
        #expect(value.objectValue?.keys == ["z", "a", "m"])
        #expect(value.objectValue?["z"] == .integer(1))
        #expect(value.objectValue?["a"] == .double(2.0))
    }

    @Test func decodesEscapesAndSurrogatePairs() throws {
        let value = try JSONReader.parse(Array(#""\u00e9\ud83d\ude00\/\t""#.utf8))
        #expect(value == .string("é😀/\t"))
    }

    @Test(arguments: [
        ("", JSONSyntaxError.Kind.unexpectedEnd),
        ("{", .unexpectedEnd),
        ("{\"a\" 1}", .unexpectedByte(UInt8(ascii: "1"))),
        ("[1,]", .unexpectedByte(UInt8(ascii: "]"))),
        ("01", .invalidNumber),
        ("1.", .invalidNumber),
        ("-", .invalidNumber),
        ("1e999", .invalidNumber),
        ("\"\\x\"", .invalidEscape),
        ("\"\\ud800\"", .invalidEscape),
        ("\"a\u{01}\"", .controlCharacterInString),
        ("{\"a\":1,\"a\":2}", .duplicateKey("a")),
        ("true false", .trailingData),
        ("nul", .unexpectedEnd),
        ("tru e", .unexpectedByte(UInt8(ascii: " "))),
    ])
    func rejectsMalformedText(_ text: String, _ kind: JSONSyntaxError.Kind) {
        #expect(throws: JSONSyntaxError.self) { try JSONReader.parse(Array(text.utf8)) }
        do {
            _ = try JSONReader.parse(Array(text.utf8))
        } catch {
            #expect(error.kind == kind, "\(text): \(error)")
        }
    }

    @Test func rejectsInvalidUTF8WithItsOffset() {
        let bytes: [UInt8] = Array(#"{"a":""#.utf8) + [0xC3, 0x28] + Array(#""}"#.utf8)
        do {
            _ = try JSONReader.parse(bytes)
            Issue.record("accepted invalid UTF-8")
        } catch {
            #expect(error.kind == .invalidUTF8)
            #expect(error.offset == 6)
            #expect(error.description.contains("not valid UTF-8"))
        }
    }

    @Test func boundsNesting() {
        let deep = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        #expect(throws: JSONSyntaxError(kind: .nestingTooDeep(limit: 64), offset: 64)) { try JSONReader.parse(Array(deep.utf8)) }
        let fine = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        #expect(throws: Never.self) { try JSONReader.parse(Array(fine.utf8)) }
    }

    @Test func duplicateKeysInLargeObjectsAreFound() {
        var text = "{"
        for i in 0..<40 { text += "\"k\(i)\":\(i)," }
        text += "\"k7\":0}"
        #expect(throws: JSONSyntaxError.self) { try JSONReader.parse(Array(text.utf8)) }
    }

    @Test func writerEscapesControlCharacters() {
        let encoded = JSONWriter.encode(.string("a\u{01}b\u{1f}\r"))
        #expect(String(decoding: encoded, as: UTF8.self) == #""a\u0001b\u001f\r""#)
    }
}
