import Foundation
import Glibc
import MediaRouteIPC

/// Malformed input toward the driver, written as raw bytes on a fresh driver each (§2, §3, §5,
/// §8): the driver must not crash. It answers with the error §8 gives and keeps or closes the
/// connection as §8 says, or it closes cleanly (ends the stream and exits without a signal).
struct MalformedInputChecks {
    let setup: KitSetup
    let report: ConformanceReport
    /// How long the driver has to answer, or to exit after closing.
    static let bound: Duration = .seconds(3)

    /// One malformed input: what is sent, the error §8 answers it with, whether §8 closes.
    struct Case: Sendable {
        let section: String
        let clause: String
        let bytes: [UInt8]
        var descriptors: Bool = false
        /// The frame limit the kit announces in its hello.
        var announcedMaximum = FrameDecoder.defaultMaximumFrameLength
        let expected: RPCError.Code
        /// §8 closes the connection after this one: the driver must not go on reading.
        let closes: Bool
        /// The id the error answers (nil: `"id": null`).
        var answers: RequestID? = nil
    }

    static func frame(_ text: String) -> [UInt8] { FrameEncoder.frame(Array(text.utf8)) }
    static func header(_ length: UInt32) -> [UInt8] { withUnsafeBytes(of: length.bigEndian) { Array($0) } }

    static let cases: [Case] = [
        Case(section: "§2 Framing", clause: "a frame of length 0 gets -32010 (id null) and the connection closes",
             bytes: header(0), expected: .frameError, closes: true),
        Case(section: "§2 Framing", clause: "a length over the agreed maximum (the kit announced 65,536; 1,000,000 sent) gets -32005 and the connection closes",
             bytes: header(1_000_000) + Array(repeating: 0x20, count: 64), announcedMaximum: 65_536, expected: .messageTooLarge, closes: true),
        Case(section: "§2 Framing", clause: "a length of 4,294,967,295 gets -32005 and the connection closes (nothing allocated for it)",
             bytes: header(UInt32.max), expected: .messageTooLarge, closes: true),
        Case(section: "§3 Messages", clause: "invalid JSON gets -32700 (id null)",
             bytes: frame(#"{"jsonrpc":"2.0","id":7,"method":"rpc.ping""#), expected: .parseError, closes: false),
        Case(section: "§3 Messages", clause: "invalid UTF-8 gets -32700 (id null)",
             bytes: FrameEncoder.frame(Array(#"{"jsonrpc":"2.0","method":"x"#.utf8) + [0xC3, 0x28] + Array(#""}"#.utf8)), expected: .parseError, closes: false),
        Case(section: "§3 Messages", clause: "duplicate object keys get -32700",
             bytes: frame(#"{"jsonrpc":"2.0","id":8,"id":9,"method":"rpc.ping"}"#), expected: .parseError, closes: false),
        Case(section: "§3 Messages", clause: "valid JSON of the wrong shape (params an array) gets -32600 with the request's id",
             bytes: frame(#"{"jsonrpc":"2.0","id":10,"method":"rpc.ping","params":[1]}"#), expected: .invalidRequest, closes: false, answers: .number(10)),
        Case(section: "§3 Messages", clause: "a message without \"jsonrpc\": \"2.0\" gets -32600",
             bytes: frame(#"{"id":11,"method":"rpc.ping"}"#), expected: .invalidRequest, closes: false, answers: .number(11)),
        // §5: an fds outside 0…16 is the wrong shape like any other: -32600, kept. A driver that
        // treats it as a descriptor mismatch (-32007, closed) fails here.
        Case(section: "§5 File descriptors", clause: "an \"fds\" outside 0…16 (17, no descriptor sent) gets -32600 with the request's id and the connection is kept",
             bytes: frame(#"{"jsonrpc":"2.0","id":14,"method":"rpc.ping","params":{},"fds":17}"#), expected: .invalidRequest, closes: false, answers: .number(14)),
        Case(section: "§5 File descriptors", clause: "a descriptor with a frame that names none gets -32007 and the connection closes",
             bytes: frame(#"{"jsonrpc":"2.0","id":12,"method":"rpc.ping","params":{}}"#), descriptors: true, expected: .descriptorMismatch, closes: true),
        Case(section: "§5 File descriptors", clause: "a frame naming a descriptor that never came (fds 1) gets -32007 and the connection closes",
             bytes: frame(#"{"jsonrpc":"2.0","id":13,"method":"rpc.ping","params":{},"fds":1}"#), expected: .descriptorMismatch, closes: true),
    ]

    /// Runs every case, two drivers at a time.
    func run() async {
        let results = await withTaskGroup(of: (Int, CheckResult).self) { group in
            var next = 0
            var results: [(Int, CheckResult)] = []
            func add() {
                guard next < Self.cases.count else { return }
                let index = next
                next += 1
                group.addTask { (index, await run(Self.cases[index])) }
            }
            add()
            add()
            for await result in group {
                results.append(result)
                add()
            }
            return results
        }
        for (_, result) in results.sorted(by: { $0.0 < $1.0 }) { report.record(result) }
    }

    private func run(_ test: Case) async -> CheckResult {
        let start = ContinuousClock.now
        let verdict: Verdict
        do { verdict = try await judge(test) } catch { verdict = .fail("\(error)") }
        return CheckResult(section: test.section, clause: test.clause, outcome: verdict.outcome, detail: verdict.detail, seconds: (ContinuousClock.now - start).seconds)
    }

    private func judge(_ test: Case) async throws -> Verdict {
        try await RawDriverChannel.with(setup) { try await judge(test, on: $0) }
    }

    private func judge(_ test: Case, on channel: RawDriverChannel) async throws -> Verdict {
        try await channel.handshake(maxFrameLength: test.announcedMaximum)
        var spare: Int32 = -1
        if test.descriptors { spare = open("/dev/null", O_RDONLY | O_CLOEXEC) }
        defer { if spare >= 0 { close(spare) } }
        try channel.send(bytes: test.bytes, descriptors: spare >= 0 ? [spare] : [])
        let answer = await channel.answer(to: test.answers, within: Self.bound)
        switch answer {
        case .message(.errorResponse(let id, let error)) where error.code == test.expected:
            guard id == test.answers else {
                return .fail("answered \(error.code) with \"id\": \(id.map { "\($0)" } ?? "null"), not \(test.answers.map { "\($0)" } ?? "null") (§8)")
            }
            guard !test.closes else { return try await closes(channel, after: "answered \(error.code)") }
            return try await keeps(channel, after: "answered \(error.code)")
        case .message(.errorResponse(_, let error)):
            return .fail("answered \(error), not \(test.expected.rawValue)")
        case .message(let other):
            return .fail("sent \(other) instead of error \(test.expected.rawValue)")
        case .closed:
            return try await closes(channel, after: "closed without an answer")
        case .garbage(let why):
            return .fail("sent an unreadable frame in reply: \(why)")
        case .nothing:
            return .fail("no answer and no close within \(Self.bound)" + (test.closes ? " (§8 closes the connection)" : ""))
        }
    }

    /// The driver must now end the stream and exit, without a signal.
    private func closes(_ channel: RawDriverChannel, after what: String) async throws -> Verdict {
        let end = await channel.read(within: Self.bound)
        if case .message(let message) = end { return .fail("\(what), then went on: \(message)") }
        guard case .closed = end else { return .fail("\(what), but kept the connection open for \(Self.bound)") }
        channel.closeOurEnd()
        guard let termination = await channel.launch.exit(within: Self.bound) else {
            return .fail("\(what) and closed, but did not exit within \(Self.bound) (killed)")
        }
        if case .signalled = termination { return .fail("\(what), then \(termination)") }
        return .pass("\(what); closed and \(termination)")
    }

    /// The driver must keep the connection: it answers a heartbeat after.
    private func keeps(_ channel: RawDriverChannel, after what: String) async throws -> Verdict {
        try channel.send(.request(id: .number(99), method: "rpc.ping", params: [:], descriptorCount: 0))
        let pong = await channel.answer(to: .number(99), within: Self.bound)
        guard case .message(.response) = pong else { return .fail("\(what), then rpc.ping got \(pong)") }
        return .pass("\(what); still answers rpc.ping")
    }
}
