@testable import MediaRouteIPC
import Testing

@Suite("Wire format: golden frames, framing, message shapes")
struct WireFormatTests {
    static let valid = GoldenVector.load("valid-frames.txt")
    static let invalid = GoldenVector.load("invalid-frames.txt")

    @Test func vectorFilesAreThere() {
        #expect(Self.valid.count >= 12)
        #expect(Self.invalid.count >= 12)
    }

    @Test(arguments: valid)
    func goldenFrameDecodesAndReEncodesByteForByte(_ vector: GoldenVector) throws {
        var decoder = FrameDecoder()
        decoder.append(vector.bytes)
        let body = try #require(try decoder.nextFrame())
        #expect(decoder.bufferedByteCount == 0)
        let message = try Message.decode(body)
        #expect(FrameEncoder.frame(message.encode()) == vector.bytes)
    }

    @Test func goldenMeaningsAreWhatTheSpecSays() throws {
        func message(_ name: String) throws -> Message {
            let vector = try #require(Self.valid.first { $0.name == name })
            return try Message.decode(vector.bytes.dropFirst(4))
        }
        guard case .request(.number(1), "hello", let params?, 0) = try message("hello-driver") else { Issue.record("hello"); return }
        let hello = try Hello(json: params)
        #expect(hello.role == .driver && hello.version == 1 && hello.maximumFrameLength == 16 << 20)
        #expect(try message("request-with-descriptors").descriptorCount == 2)
        #expect(try message("parse-error-null-id") == .errorResponse(id: nil, error: RPCError(.parseError, "test peer sent a frame that is not JSON: unexpected '}' at offset 12")))
        #expect(try message("request-string-id") == .request(id: .string("a-7"), method: "echo", params: [:], descriptorCount: 0))
    }

    @Test(arguments: invalid)
    func invalidFrameIsRefusedAtTheRightLayer(_ vector: GoldenVector) throws {
        let expect = try #require(vector.expect)
        let (layer, detail) = (expect.prefix { $0 != ":" }, expect.drop { $0 != ":" }.dropFirst(2))
        var decoder = FrameDecoder()
        decoder.append(vector.bytes)
        let frame: ArraySlice<UInt8>?
        do {
            frame = try decoder.nextFrame()
        } catch {
            #expect(layer == "frame" && "\(error)".hasPrefix(Self.frameSentence(detail)), "\(vector.name): \(error)")
            return
        }
        guard let frame else {
            #expect(layer == "frame")
            #expect(throws: FrameError.self) { try decoder.finish() }
            return
        }
        do {
            _ = try JSONReader.parse(frame)
        } catch {
            #expect(layer == "json" && "\(error.kind)".hasPrefix(detail), "\(vector.name): \(error)")
            return
        }
        do {
            _ = try Message.decode(frame)
            Issue.record("\(vector.name) was accepted")
        } catch let error as MessageShapeError {
            #expect(layer == "shape" && error.reason == String(detail), "\(vector.name): \(error)")
        }
    }

    private static func frameSentence(_ kind: Substring) -> String {
        switch kind {
        case "zeroLength": "frame header announces length 0"
        case "tooLong": "frame header announces 16777217 bytes"
        default: "the peer closed the stream"
        }
    }

    /// The same stream fed one byte at a time gives exactly the frames it gives in one read.
    @Test func oneByteAtATimeDecodesLikeOneRead() throws {
        let stream = Self.valid.flatMap(\.bytes)
        var whole = FrameDecoder()
        whole.append(stream)
        var wholeFrames: [[UInt8]] = []
        while let frame = try whole.nextFrame() { wholeFrames.append(Array(frame)) }

        var single = FrameDecoder()
        var singleFrames: [[UInt8]] = []
        for byte in stream {
            single.append(CollectionOfOne(byte))
            while let frame = try single.nextFrame() { singleFrames.append(Array(frame)) }
        }
        #expect(wholeFrames.count == Self.valid.count)
        #expect(singleFrames == wholeFrames)
        #expect(single.consumedOffset == stream.count)
    }

    @Test func truncationIsReportedPrecisely() {
        var header = FrameDecoder()
        header.append([0, 0])
        #expect(throws: FrameError.truncatedHeader(received: 2)) { try header.finish() }
        var body = FrameDecoder()
        body.append([0, 0, 0, 100] + Array(repeating: UInt8(ascii: " "), count: 10))
        #expect(throws: Never.self) { _ = try body.nextFrame() }
        #expect(throws: FrameError.truncatedBody(expected: 100, received: 10)) { try body.finish() }
        #expect(FrameError.truncatedBody(expected: 100, received: 10).description == "the peer closed the stream after 10 of the 100 bytes of a frame body")
    }

    @Test func oversizedLengthIsRefusedBeforeAnyAllocation() {
        var decoder = FrameDecoder(maximumFrameLength: 1024)
        decoder.append([0xFF, 0xFF, 0xFF, 0xFF])
        #expect(throws: FrameError.tooLong(length: 0xFFFF_FFFF, maximum: 1024)) { try decoder.nextFrame() }
        #expect(decoder.bufferedByteCount == 4)
    }

    @Test func messageShapeErrorsKeepTheIdTheyCouldRead() {
        do {
            _ = try Message.decode(json: ["jsonrpc": "2.0", "id": 5, "method": 3])
            Issue.record("accepted a numeric method")
        } catch {
            #expect(error.id == .number(5))
            #expect(error.reason == "\"method\" must be a non-empty string")
        }
    }

    /// A frame is read straight into the message's fields; it must judge exactly as reading the
    /// whole JSON value first and checking its shape does.
    @Test func framesAreJudgedAsTheirJSONValueIs() throws {
        let accepted = [
            #"{"jsonrpc":"2.0","id":1,"method":"a","params":{"x":[1,{"y":null}]},"fds":0}"#,
            #"{ "x-extension" : {"jsonrpc":1}, "method" : "n", "jsonrpc" : "2.0" }"#,  // unknown members are dropped
            #"{"result":{"id":2},"id":"two","jsonrpc":"2.0"}"#,
            #"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"m"}}"#,
        ]
        for text in accepted {
            let bytes = Array(text.utf8)
            #expect(try Message.decode(bytes) == Message.decode(json: JSONReader.parse(bytes)), "\(text)")
        }
        let refused: [(String, JSONSyntaxError)] = [
            (#"{"id":1,"jsonrpc":"2.0","id":2}"#, JSONSyntaxError(kind: .duplicateKey("id"), offset: 24)),
            (#"{"x":1,"jsonrpc":"2.0","x":2}"#, JSONSyntaxError(kind: .duplicateKey("x"), offset: 23)),
            (#"{"jsonrpc":"2.0","method":"a"} x"#, JSONSyntaxError(kind: .trailingData, offset: 31)),
            (#"{"jsonrpc":"2.0","params":{"#, JSONSyntaxError(kind: .unexpectedEnd, offset: 27)),
        ]
        for (text, error) in refused {
            #expect(throws: error, "\(text)") { try Message.decode(Array(text.utf8)) }
            #expect(throws: error, "\(text)") { try JSONReader.parse(Array(text.utf8)) }
        }
        #expect(throws: MessageShapeError(reason: "a message must be a JSON object, got a number", id: nil)) {
            try Message.decode(Array(" 42 ".utf8))
        }
    }
}
