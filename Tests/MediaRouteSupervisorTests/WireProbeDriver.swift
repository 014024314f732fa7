import Foundation
import MediaRouteIPC
import TestSupport

/// A driver written from IPC/README.md alone, in Python, as a stranger would write one (issue 12):
/// it speaks the frames and messages by hand, offers one absolute-volume speaker ("Probe Speaker"),
/// and logs each `volume.set` with the number exactly as it was written on the wire, so a test
/// sees what a driver in another language reads, not what Swift's Float makes of it. A session
/// starts "loading" and plays at once, both reports in one write.
enum WireProbeDriver {
    static let deviceName = "Probe Speaker"
    /// What the driver writes to stderr (the daemon's log) before the number it received.
    static let volumeMarker = "wire probe: volume.set "

    /// Writes the script and its manifest into the harness's drivers directory. With
    /// `exitAfterHello` the driver leaves (status 5) the moment its handshake is answered.
    static func install(in drivers: SupervisorHarness, protocol protocolID: String, exitAfterHello: Bool = false,
                        restart: JSONObject = ["intensity": 5, "periodSeconds": 60, "initialBackoffMilliseconds": 20, "maximumBackoffMilliseconds": 200]) throws {
        let script = drivers.root + "/wire-probe.py"
        try source.write(toFile: script, atomically: true, encoding: .utf8)
        let manifest: JSONValue = [
            "protocol": .string(protocolID),
            "exportedType": ["identifier": .string(protocolID), "conformsTo": ["public.media-sharing-protocol"], "description": "Wire probe"],
            "executable": "/usr/bin/python3", "arguments": .array([.string(script), .string(protocolID)] + (exitAfterHello ? ["exit-after-hello"] : [])),
            "restart": .object(restart),
        ]
        try Data(JSONWriter.encode(manifest)).write(to: URL(fileURLWithPath: "\(drivers.drivers)/\(protocolID).json"))
    }

    /// The numbers the driver logged for `volume.set`, as text, oldest first.
    static func volumesReceived(in log: String) -> [String] {
        log.split(separator: "\n").compactMap { line in
            line.range(of: volumeMarker).map { String(line[$0.upperBound...]).trimmingCharacters(in: .whitespaces) }
        }
    }

    private static let source = #"""
    import json, os, re, socket, struct, sys

    protocol = sys.argv[1]
    channel = socket.socket(fileno=3)

    def send(message):
        body = json.dumps(message, separators=(",", ":")).encode()
        channel.sendall(struct.pack(">I", len(body)) + body)

    def read_exactly(count):
        data = b""
        while len(data) < count:
            chunk = channel.recv(count - len(data))
            if not chunk:
                sys.exit(0)
            data += chunk
        return data

    def receive():
        (length,) = struct.unpack(">I", read_exactly(4))
        return read_exactly(length)

    send({"jsonrpc": "2.0", "id": 1, "method": "hello", "params": {
        "version": 1, "role": "driver", "maxFrameLength": 16777216, "features": [],
        "identity": {"name": "wire-probe", "protocol": protocol, "pid": os.getpid(),
                     "supportsSimultaneousSessions": False, "realtimeSampleHandling": False}}})
    receive()
    if sys.argv[2:] == ["exit-after-hello"]:
        os._exit(5)
    device = {"id": protocol + "/probe", "displayName": "Probe Speaker", "capabilities": ["urlPlayback"],
              "deviceType": "speaker", "volumeControl": "absolute", "canMute": False}
    volume = "0.5"
    while True:
        body = receive()
        message = json.loads(body)
        if "method" not in message or "id" not in message:
            continue
        method, params = message["method"], message.get("params", {})
        result = None
        if method == "rpc.ping":
            result = {}
        elif method == "volume.set":
            volume = re.search(rb'"volume":([-+0-9.eE]+)', body).group(1).decode()
            print("wire probe: volume.set " + volume, file=sys.stderr, flush=True)
        elif method == "volume.get":
            result = {"volume": float(volume), "muted": False}
        send({"jsonrpc": "2.0", "id": message["id"], "result": result})
        if method == "discovery.start":
            send({"jsonrpc": "2.0", "method": "device.found", "params": {"device": device}})
        elif method == "device.activate":
            send({"jsonrpc": "2.0", "method": "device.activated", "params": {"device": device["id"], "session": params["session"]}})
        elif method == "session.start":
            # Started while loading, then playing at once: both in one write, as a fast device
            # makes them, so the supervisor reads the newer state before it has taken in the start.
            started = json.dumps({"jsonrpc": "2.0", "method": "session.started", "params": {
                "session": params["session"], "state": {"state": "loading"}}}, separators=(",", ":")).encode()
            playing = json.dumps({"jsonrpc": "2.0", "method": "playback.state", "params": {
                "session": params["session"], "state": {"isPlaying": True, "state": "playing"}}}, separators=(",", ":")).encode()
            channel.sendall(struct.pack(">I", len(started)) + started + struct.pack(">I", len(playing)) + playing)
    """#
}
