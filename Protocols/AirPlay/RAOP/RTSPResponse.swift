/// One RTSP/1.0 answer from a receiver, parsed from bytes the receiver controls: everything about
/// it is checked and bounded, so a hostile or broken receiver yields an `RAOPError`, never a crash
/// or an unbounded buffer.
public struct RTSPResponse: Sendable, Equatable {
    public let status: Int
    public let reason: String
    /// In the order received; names as sent (look them up with `header(_:)`, which ignores case).
    public let headers: [(name: String, value: String)]
    public let body: [UInt8]

    /// Limits no real receiver comes near (shairport-sync's answers are a few hundred bytes).
    public static let maximumHeadBytes = 16 * 1024
    public static let maximumHeaderCount = 64
    public static let maximumBodyBytes = 64 * 1024

    public init(status: Int, reason: String, headers: [(name: String, value: String)], body: [UInt8]) {
        self.status = status
        self.reason = reason
        self.headers = headers
        self.body = body
    }

    public static func == (lhs: RTSPResponse, rhs: RTSPResponse) -> Bool {
        lhs.status == rhs.status && lhs.reason == rhs.reason && lhs.body == rhs.body
            && lhs.headers.map(\.name) == rhs.headers.map(\.name) && lhs.headers.map(\.value) == rhs.headers.map(\.value)
    }

    /// The first header of that name, whatever its case.
    public func header(_ name: String) -> String? {
        headers.first { $0.name.equalsIgnoringCase(name) }?.value
    }

    /// The CSeq the answer carries, if it carries a number there.
    public var cseq: Int? { header("CSeq").flatMap { Int($0.trimmingSpaces) } }

    /// Parses one answer from the start of `bytes`: the answer and how many bytes it took, nil if
    /// more bytes are needed; throws once the bytes cannot be (or grow into) a valid answer.
    public static func parse(_ bytes: some RandomAccessCollection<UInt8>) throws(RAOPError) -> (response: RTSPResponse, length: Int)? {
        let data = Array(bytes.prefix(maximumHeadBytes + 4))
        guard let headEnd = Self.endOfHead(in: data) else {
            if bytes.count > maximumHeadBytes {
                throw RAOPError(.responseTooLarge, "the receiver's answer has no end of headers within \(maximumHeadBytes) bytes")
            }
            return nil
        }
        guard let head = String(validating: data[..<headEnd], as: UTF8.self) else {
            throw RAOPError(.malformedResponse, "the receiver's answer headers are not text (invalid UTF-8)")
        }
        var lines = head.split(separator: "\r\n", omittingEmptySubsequences: false).map(String.init)
        let statusLine = lines.removeFirst()
        let (status, reason) = try parseStatusLine(statusLine)
        guard lines.count <= maximumHeaderCount else {
            throw RAOPError(.responseTooLarge, "the receiver's answer has \(lines.count) headers; at most \(maximumHeaderCount) are read")
        }
        var headers: [(name: String, value: String)] = []
        for line in lines {
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex,
                  !line[..<colon].contains(where: { $0 == " " || $0 == "\t" }) else {
                throw RAOPError(.malformedResponse, "the receiver's answer has a header line without a name and colon: \"\(line.prefix(80))\"")
            }
            headers.append((String(line[..<colon]), String(line[line.index(after: colon)...]).trimmingSpaces))
        }
        let response = RTSPResponse(status: status, reason: reason, headers: headers, body: [])
        var bodyLength = 0
        if let length = response.header("Content-Length") {
            guard let parsed = Int(length.trimmingSpaces), parsed >= 0 else {
                throw RAOPError(.malformedResponse, "the receiver's Content-Length \"\(length.prefix(40))\" is not a byte count")
            }
            guard parsed <= maximumBodyBytes else {
                throw RAOPError(.responseTooLarge, "the receiver announces a body of \(parsed) bytes; at most \(maximumBodyBytes) are read")
            }
            bodyLength = parsed
        }
        let bodyStart = headEnd + 4
        guard bytes.count >= bodyStart + bodyLength else { return nil }
        let start = bytes.index(bytes.startIndex, offsetBy: bodyStart)
        let body = Array(bytes[start..<bytes.index(start, offsetBy: bodyLength)])
        return (RTSPResponse(status: status, reason: reason, headers: headers, body: body), bodyStart + bodyLength)
    }

    private static func endOfHead(in data: [UInt8]) -> Int? {
        guard data.count >= 4 else { return nil }
        for i in 0...(data.count - 4) where data[i] == 13 && data[i + 1] == 10 && data[i + 2] == 13 && data[i + 3] == 10 {
            return i
        }
        return nil
    }

    private static func parseStatusLine(_ line: String) throws(RAOPError) -> (Int, String) {
        let parts = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0] == "RTSP/1.0", parts[1].count == 3, let status = Int(parts[1]), status >= 100 else {
            throw RAOPError(.malformedResponse, "the receiver's answer does not start with an RTSP/1.0 status line: \"\(line.prefix(80))\"")
        }
        return (status, parts.count > 2 ? String(parts[2]) : "")
    }
}

extension String {
    /// Without leading and trailing spaces and tabs (header values).
    var trimmingSpaces: String {
        var slice = Substring(self)
        while let first = slice.first, first == " " || first == "\t" { slice.removeFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice.removeLast() }
        return String(slice)
    }

    func equalsIgnoringCase(_ other: String) -> Bool { lowercased() == other.lowercased() }
}
