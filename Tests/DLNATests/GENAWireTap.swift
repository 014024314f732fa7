import Foundation
import PrivateDaemons

/// What crosses a renderer's interface in GENA: every `SUBSCRIBE`, `UNSUBSCRIBE` and event `NOTIFY`
/// (ours to the renderer and the renderer's to its subscribers), read off the wire with a packet
/// socket in the renderer's namespace, so a test sees what the renderer was really sent. It also
/// runs an event sink on the renderer's host for subscriptions the test makes by hand (their
/// NOTIFYs stay on the host and are printed as `SINK NOTIFY`). Stopped by PID.
final class GENAWireTap: Sendable {
    /// One request seen on the wire.
    struct Request: Sendable, Hashable {
        var method: String
        var path: String
        var sid: String?
        var seq: Int?
        var hasCallback: Bool
        var hasNT: Bool
        var timeout: String?
        /// When the tap saw it, in seconds on the tap's monotonic clock.
        var at: Double
    }

    let console: ConsoleProcess
    /// Where the sink takes NOTIFYs, for a hand-made subscription's CALLBACK.
    let sinkURL: String

    private init(console: ConsoleProcess, sinkURL: String) {
        self.console = console
        self.sinkURL = sinkURL
    }

    /// Starts listening on `host`'s interface; returns once the tap is reading.
    static func start(on host: PrivateHost, directory: String, sinkPort: Int = 49700) async throws -> GENAWireTap {
        let script = directory + "/gena-wire-tap.py"
        try source.write(toFile: script, atomically: true, encoding: .utf8)
        let prefix = host.network.commandPrefix(in: host.namespace)
        let console = try ConsoleProcess(prefix[0], Array(prefix.dropFirst()) + ["/usr/bin/python3", "-u", script, host.interface, host.address, String(sinkPort)],
                                         logPath: directory + "/gena-wire-tap-\(host.address).log")
        let tap = GENAWireTap(console: console, sinkURL: "http://\(host.address):\(sinkPort)/")
        do {
            try await console.waitFor("tap ready", seconds: 10)
        } catch {
            await tap.stop()
            throw error
        }
        return tap
    }

    /// Every request seen so far, in order.
    var requests: [Request] {
        console.output.split(separator: "\n").compactMap { line in
            let words = line.split(separator: " ").map(String.init)
            guard words.count >= 2, ["SUBSCRIBE", "UNSUBSCRIBE", "NOTIFY"].contains(words[0]) else { return nil }
            var fields: [String: String] = [:]
            for word in words.dropFirst(2) {
                let parts = word.split(separator: "=", maxSplits: 1).map(String.init)
                if parts.count == 2, parts[1] != "-" { fields[parts[0]] = parts[1] }
            }
            return Request(method: words[0], path: words[1], sid: fields["sid"], seq: fields["seq"].flatMap(Int.init),
                           hasCallback: fields["callback"] == "yes", hasNT: fields["nt"] == "yes", timeout: fields["timeout"],
                           at: fields["at"].flatMap(Double.init) ?? 0)
        }
    }

    /// The SIDs of the NOTIFYs the sink received.
    var sinkNotifications: [String] {
        console.output.split(separator: "\n").compactMap { line in
            guard line.hasPrefix("SINK NOTIFY sid=") else { return nil }
            return String(line.dropFirst("SINK NOTIFY sid=".count).split(separator: " ").first ?? "")
        }
    }

    func stop() async { await console.stop(grace: .seconds(2)) }

    private static let source = #"""
    import socket, struct, sys, threading, time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    interface, address, sink_port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    methods = (b"SUBSCRIBE ", b"UNSUBSCRIBE ", b"NOTIFY /")

    def say(line):
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    class Sink(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_NOTIFY(self):
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            say("SINK NOTIFY sid=%s seq=%s" % (self.headers.get("SID"), self.headers.get("SEQ")))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

    server = ThreadingHTTPServer((address, sink_port), Sink)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    # Every frame on the interface, both ways (ETH_P_ALL).
    tap = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.ntohs(0x0003))
    tap.bind((interface, 0))
    say("tap ready")
    seen = set()
    while True:
        frame = tap.recv(65535)
        # IPv4 carrying TCP only.
        if len(frame) < 34 or frame[12:14] != b"\x08\x00" or frame[23] != 6:
            continue
        tcp = 14 + (frame[14] & 0x0F) * 4
        source_port, destination_port, sequence = struct.unpack("!HHI", frame[tcp:tcp + 8])
        payload = frame[tcp + (frame[tcp + 12] >> 4) * 4:]
        if not payload.startswith(methods):
            continue
        key = (frame[26:34], source_port, destination_port, sequence)  # a retransmission is one request
        if key in seen:
            continue
        seen.add(key)
        lines = payload.decode("latin-1").split("\r\n")
        start = lines[0].split(" ")
        headers = {}
        for line in lines[1:]:
            if not line:
                break
            name, _, value = line.partition(":")
            headers[name.strip().upper()] = value.strip()
        say("%s %s at=%.3f sid=%s seq=%s callback=%s nt=%s timeout=%s" % (
            start[0], start[1], time.monotonic(), headers.get("SID", "-"), headers.get("SEQ", "-"),
            "yes" if "CALLBACK" in headers else "no", "yes" if "NT" in headers else "no", headers.get("TIMEOUT", "-")))
    """#
}
