import Foundation
import Glibc
import MediaRouteIPC
import NIOHTTP1
import Testing
import TestSupport
import UPnP

@Suite("MediaServer served through HTTPServer to curl", .timeLimit(.minutes(2)))
struct MediaServerTests {
    static let fileFeatures = "DLNA.ORG_OP=01;DLNA.ORG_CI=0;DLNA.ORG_FLAGS=01700000000000000000000000000000"
    static let liveFeatures = "DLNA.ORG_OP=00;DLNA.ORG_CI=0;DLNA.ORG_FLAGS=0D500000000000000000000000000000"

    @Test func servesAFileWholeInRangesAndToHEAD() async throws {
        try await withMediaServer { media, base, directory in
            let content = (0..<1000).map { UInt8(truncatingIfNeeded: $0 * 31 + 7) }
            try Data(content).write(to: URL(fileURLWithPath: directory + "/song one.flac"))
            let path = media.publish(file: directory + "/song one.flac", mimeType: "audio/flac", for: "127.0.0.1")
            #expect(path.hasPrefix("/media/"))
            #expect(path.hasSuffix("/song%20one.flac"))
            let url = base + path

            let whole = try await curl(["-H", "getcontentFeatures.dlna.org: 1", url], in: directory)
            #expect(whole.status == 200)
            #expect(whole.body == content)
            #expect(whole.headers["content-type"] == "audio/flac")
            #expect(whole.headers["content-length"] == "1000")
            #expect(whole.headers["accept-ranges"] == "bytes")
            #expect(whole.headers["transfermode.dlna.org"] == "Streaming")
            #expect(whole.headers["contentfeatures.dlna.org"] == Self.fileFeatures)

            let middle = try await curl(["-H", "Range: bytes=10-19", url], in: directory)
            #expect(middle.status == 206)
            #expect(middle.headers["content-range"] == "bytes 10-19/1000")
            #expect(middle.headers["content-length"] == "10")
            #expect(middle.body == Array(content[10...19]))

            let tail = try await curl(["-H", "Range: bytes=990-", url], in: directory)
            #expect(tail.status == 206)
            #expect(tail.headers["content-range"] == "bytes 990-999/1000")
            #expect(tail.body == Array(content[990...]))

            let suffix = try await curl(["-H", "Range: bytes=-5", url], in: directory)
            #expect(suffix.status == 206)
            #expect(suffix.headers["content-range"] == "bytes 995-999/1000")
            #expect(suffix.body == Array(content[995...]))

            let beyondEnd = try await curl(["-H", "Range: bytes=500-5000", url], in: directory)
            #expect(beyondEnd.headers["content-range"] == "bytes 500-999/1000")
            #expect(beyondEnd.body == Array(content[500...]))

            let unsatisfiable = try await curl(["-H", "Range: bytes=1000-", url], in: directory)
            #expect(unsatisfiable.status == 416)
            #expect(unsatisfiable.headers["content-range"] == "bytes */1000")

            // Several ranges: the whole file, 200.
            let several = try await curl(["-H", "Range: bytes=0-1,5-6", url], in: directory)
            #expect(several.status == 200)
            #expect(several.body == content)

            let head = try await curl(["-I", url], in: directory)
            #expect(head.status == 200)
            #expect(head.headers["content-length"] == "1000")
            #expect(head.headers["contentfeatures.dlna.org"] == Self.fileFeatures)
            let headOfRange = try await curl(["-I", "-H", "Range: bytes=100-", url], in: directory)
            #expect(headOfRange.status == 206)
            #expect(headOfRange.headers["content-length"] == "900")

            #expect(media.statistics(for: path).requests == 7, "GETs only, HEADs not counted")
            try await waitUntil("every byte served counted") { media.statistics(for: path).bytes == 1000 + 10 + 10 + 5 + 500 + 1000 }
        }
    }

    @Test func answersOnlyTheRendererItWasPublishedFor() async throws {
        try await withMediaServer { media, base, directory in
            try Data("abc".utf8).write(to: URL(fileURLWithPath: directory + "/a.mp3"))
            let path = media.publish(file: directory + "/a.mp3", mimeType: "audio/mpeg", for: "127.0.0.1")

            let stranger = try await curl(["--interface", "127.0.0.2", base + path], in: directory)
            #expect(stranger.status == 403)
            #expect(String(decoding: stranger.body, as: UTF8.self) == "\(path) is served to 127.0.0.1 only, not to 127.0.0.2.\n")

            let guessed = try await curl([base + "/media/0123456789abcdef0123456789abcdef/a.mp3"], in: directory)
            #expect(guessed.status == 404)
            let post = try await curl(["--data-binary", "x", base + path], in: directory)
            #expect(post.status == 405)
            #expect(post.headers["allow"] == "GET, HEAD")
            let elsewhere = try await curl([base + "/description.xml"], in: directory)
            #expect(String(decoding: elsewhere.body, as: UTF8.self) == "not media\n", "paths outside /media/ are left to the caller")

            unlink(directory + "/a.mp3")
            let vanished = try await curl([base + path], in: directory)
            #expect(vanished.status == 410)
            #expect(String(decoding: vanished.body, as: UTF8.self).contains("no longer exists"))

            media.unpublish(path)
            let unpublished = try await curl([base + path], in: directory)
            #expect(unpublished.status == 404)
        }
    }

    @Test func servesALiveStreamUntilTheRendererLeaves() async throws {
        let producer = PacedProducer()
        let bodiesMade = EventLog<Int>()
        try await withMediaServer { media, base, directory in
            let path = media.publish(stream: "audio/L16;rate=48000;channels=2", for: "127.0.0.1") {
                bodiesMade.append(1)
                return producer.stream()
            }
            let head = try await curl(["-I", "-H", "getcontentFeatures.dlna.org: 1", base + path], in: directory)
            #expect(head.status == 200)
            #expect(head.headers["content-type"] == "audio/L16;rate=48000;channels=2")
            #expect(head.headers["contentfeatures.dlna.org"] == Self.liveFeatures)
            #expect(head.headers["transfermode.dlna.org"] == "Streaming")
            #expect(head.headers["content-length"] == nil)
            #expect(head.headers["accept-ranges"] == nil)
            #expect(bodiesMade.all.isEmpty, "HEAD starts no stream")

            // curl reads 1 MiB (asking for a range, which a live stream ignores) and is gone.
            let headersPath = directory + "/live-headers"
            let output = try await ChildOutput.run("/bin/sh", ["-c", "/usr/bin/curl -sS -N --max-time 20 -D \"$1\" -H 'Range: bytes=100-' \"$2\" | head -c 1048576 | wc -c",
                                                               "sh", headersPath, base + path], timeout: .seconds(30))
            #expect(output.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines) == "1048576")
            let headers = try String(contentsOfFile: headersPath, encoding: .utf8).lowercased()
            #expect(headers.hasPrefix("http/1.1 200 ok\r\n"))
            #expect(headers.contains("transfer-encoding: chunked\r\n"))
            #expect(headers.contains("contentfeatures.dlna.org: \(Self.liveFeatures.lowercased())\r\n"))
            try await waitUntil("the live producer sees the renderer leave", seconds: 10) { producer.terminated }
            #expect(bodiesMade.all.count == 1)
            let statistics = media.statistics(for: path)
            #expect(statistics.requests == 1)
            #expect(statistics.bytes >= 1 << 20)
        }
    }
}

/// A MediaServer behind an HTTPServer on 127.0.0.1 (other paths answer "not media"), and a
/// temporary directory, all gone after `body`.
func withMediaServer(_ body: (MediaServer, String, String) async throws -> Void) async throws {
    let media = MediaServer()
    try await withTemporaryDirectory { directory in
        try await withHTTPServer({ request in await media.handle(request) ?? .text(.notFound, "not media") }) { server in
            try await body(media, "http://127.0.0.1:\(server.port)", directory)
        }
    }
}
