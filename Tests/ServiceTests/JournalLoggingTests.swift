import CLinuxHelpers
import Foundation
import Glibc
import Logging
import MediaRouteIPC
import MediaRouteSupervisor
import Testing
import TestSupport

/// Logs journald understands: `<N>` prefixes on a stderr that `JOURNAL_STREAM` names, and the
/// native protocol to a socket this test owns (`MEDIAROUTE_JOURNAL_SOCKET`), read back field by field.
@Suite("mediarouted's log for journald", .timeLimit(.minutes(1)))
struct JournalLoggingTests {
    /// stderr a pipe whose device and inode `JOURNAL_STREAM` gives: every line has its priority.
    @Test func aStderrThatIsTheJournalGetsPriorityPrefixes() async throws {
        let lines = try await daemonStderrLines(journalStream: { "\($0.st_dev):\($0.st_ino)" })
        #expect(lines.contains { $0.hasPrefix("<6>mediarouted ") && $0.contains(" listening on ") }, "\(lines)")
        #expect(lines.contains { $0.hasPrefix("<3>refused driver manifest ") }, "\(lines)")   // error
        #expect(lines.contains { $0.hasPrefix("<5>--log-journal: journald's socket ") }, "\(lines)")  // notice
        #expect(lines.allSatisfy { $0.hasPrefix("<") }, "\(lines)")
    }

    /// A `JOURNAL_STREAM` of another stream (stderr redirected since systemd set it): plain lines.
    @Test func aStderrThatIsNotTheJournalStaysPlain() async throws {
        let lines = try await daemonStderrLines(journalStream: { "\($0.st_dev):\($0.st_ino + 1)" })
        #expect(lines.contains { $0.contains(" info mediarouted: ") && $0.contains(" listening on ") }, "\(lines)")
        #expect(!lines.contains { $0.hasPrefix("<") }, "\(lines)")
    }

    /// The daemon's stderr as lines, with stderr a pipe and `JOURNAL_STREAM` made from the pipe's stat.
    private func daemonStderrLines(journalStream: (stat) -> String) async throws -> [String] {
        var ends: [Int32] = [-1, -1]
        try #require(clh_pipe_cloexec(&ends) == 0)
        var info = stat()
        try #require(fstat(ends[1], &info) == 0)
        var lines: [String] = []
        try await DaemonHarness.run { harness in
            try "{ not json".write(toFile: harness.drivers.drivers + "/broken.json", atomically: true, encoding: .utf8)
            try await harness.start(["--log-journal"], environment: ["JOURNAL_STREAM": journalStream(info),
                                                                     JournalSocket.pathOverrideVariable: harness.drivers.root + "/no-journal-here"],
                                    standardError: ends[1])
            close(ends[1])
            await harness.stop()
            var output: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {  // the daemon has exited: read to the end
                let count = buffer.withUnsafeMutableBytes { read(ends[0], $0.baseAddress, $0.count) }
                guard count > 0 else { break }
                output += buffer[0..<count]
            }
            close(ends[0])
            lines = String(decoding: output, as: UTF8.self).split(separator: "\n").map(String.init)
        }
        return lines
    }

    /// The native protocol through the real daemon: its own lines, a driver's stderr lines with
    /// MEDIAROUTE_DRIVER, a route's with its device and route.
    @Test func nativeEntriesCarryTheDriverDeviceAndRoute() async throws {
        try await DaemonHarness.run { harness in
            let inbox = try DatagramInbox(name: harness.drivers.root + "/journal.socket")
            defer { inbox.close() }
            try harness.drivers.addDriver("org.test.alpha", devices: ["Living Room TV"])
            try await harness.start(["--log-journal"], environment: [JournalSocket.pathOverrideVariable: inbox.name])
            let activated = await harness.cli(["activate", "Living Room TV"])
            #expect(activated.status == .exited(0), "\(activated.error)")
            func entries() -> [[String: String]] { inbox.all.compactMap { journalFields($0.bytes) } }
            try await waitUntil("the route's entry", seconds: 10) { entries().contains { $0["MESSAGE"]?.hasPrefix("route active:") == true } }
            let all = entries()
            let listening = try #require(all.first { $0["MESSAGE"]?.contains(" listening on ") == true }, "\(all)")
            #expect(listening["PRIORITY"] == "6")
            #expect(listening["SYSLOG_IDENTIFIER"] == "mediarouted")
            #expect(listening["CODE_FILE"]?.hasSuffix("Mediarouted.swift") == true)
            let driverLine = try #require(all.first { $0["MESSAGE"] == "[org.test.alpha] test driver org.test.alpha up" }, "\(all)")
            #expect(driverLine["MEDIAROUTE_DRIVER"] == "org.test.alpha")
            let route = try #require(all.first { $0["MESSAGE"]?.hasPrefix("route active:") == true })
            #expect(route["MEDIAROUTE_DRIVER"] == "org.test.alpha")
            #expect(route["MEDIAROUTE_DEVICE"] == "Living Room TV")
            #expect(route["MEDIAROUTE_ROUTE"]?.isEmpty == false)
            // Nothing went to stderr instead.
            await harness.stop()
            #expect(!harness.log.contains("listening on"), "\(harness.log)")
        }
    }

    /// The handler alone: every level's priority, metadata as fields, and a message of several
    /// lines, which the protocol carries with its length.
    @Test func theNativeHandlerEncodesLevelsMetadataAndMultilineMessages() async throws {
        let path = NSTemporaryDirectory() + "mediaroute-journal-\(UUID().uuidString.prefix(8))"
        let inbox = try DatagramInbox(name: path)
        defer { inbox.close() }
        var logger = Logger(label: "test") { label in JournalLogHandler(label: label, output: .native(JournalSocket(path: path)!)) }
        logger.logLevel = .trace
        let levels: [(Logger.Level, String)] = [(.trace, "7"), (.debug, "7"), (.info, "6"), (.notice, "5"), (.warning, "4"), (.error, "3"), (.critical, "2")]
        for (level, _) in levels { logger.log(level: level, "at \(level)") }
        logger[metadataKey: "driver"] = "org.test.alpha"
        logger.error("first line\nsecond line\n", metadata: ["session": "s7", "odd key!": "x=y"])
        // Local datagrams are queued in order by the time `log` returns; the inbox's thread takes them.
        try await waitUntil("every entry", seconds: 15) { inbox.all.count == levels.count + 1 }
        let entries = inbox.all.compactMap { journalFields($0.bytes) }
        try #require(entries.count == levels.count + 1, "\(inbox.all.map(\.text))")
        for (entry, (level, priority)) in zip(entries, levels) {
            #expect(entry["PRIORITY"] == priority && entry["MESSAGE"] == "at \(level)", "\(entry)")
        }
        let last = entries[levels.count]
        #expect(last["MESSAGE"] == "first line\nsecond line\n")
        #expect(last["PRIORITY"] == "3")
        #expect(last["MEDIAROUTE_DRIVER"] == "org.test.alpha")
        #expect(last["MEDIAROUTE_SESSION"] == "s7")
        #expect(last["MEDIAROUTE_ODD_KEY_"] == "x=y")
        #expect(last["SYSLOG_IDENTIFIER"] == "mediarouted")
    }
}

/// A native-protocol datagram's fields (the last value of a repeated one); nil if it is malformed.
func journalFields(_ bytes: [UInt8]) -> [String: String]? {
    var fields: [String: String] = [:]
    var index = 0
    while index < bytes.count {
        guard let end = bytes[index...].firstIndex(where: { $0 == UInt8(ascii: "\n") || $0 == UInt8(ascii: "=") }) else { return nil }
        let name = String(decoding: bytes[index..<end], as: UTF8.self)
        if bytes[end] == UInt8(ascii: "=") {
            guard let lineEnd = bytes[end...].firstIndex(of: UInt8(ascii: "\n")) else { return nil }
            fields[name] = String(decoding: bytes[(end + 1)..<lineEnd], as: UTF8.self)
            index = lineEnd + 1
        } else {
            guard end + 9 <= bytes.count else { return nil }
            let length = bytes[(end + 1)..<(end + 9)].reversed().reduce(0) { $0 << 8 | Int($1) }
            let start = end + 9
            guard start + length < bytes.count, bytes[start + length] == UInt8(ascii: "\n") else { return nil }
            fields[name] = String(decoding: bytes[start..<(start + length)], as: UTF8.self)
            index = start + length + 1
        }
    }
    return fields
}
