import AVSystemRouting
import Foundation
import MediaDevice
import MediaRouteIPC
@testable import MediaRouteSupervisor
import PrivateDaemons
import Testing
import TestSupport

/// A private LAN (network namespaces the test makes) with real gmediarender renderers on it, and
/// the supervisor running the real DLNA driver inside the LAN's controller namespace (SSDP must
/// multicast on a real interface: never the host's), serving apps on its socket.
final class DLNATestBed: @unchecked Sendable {  // set up in init, then used by its one test; tearDown after the body
    let harness: SupervisorHarness
    let network: PrivateNetwork
    private(set) var renderers: [PrivateRenderer] = []
    private var server: ControlServer?
    private(set) lazy var apps = AppControllers(socket: socket)
    private var children: [ChildProcess] = []
    private var taps: [GENAWireTap] = []
    var supervisor: Supervisor { harness.supervisor }
    var socket: String { harness.root + "/mediarouted.sock" }
    static let protocolID = "org.mediaroute.dlna"

    /// Runs `body` on a fresh bed and always tears it down, whether `body` returns, throws or is
    /// cancelled. `environment` adds to the driver's (its settings, such as `MEDIAROUTE_DLNA_EVENT_SECONDS`).
    static func run(environment: [String: String] = [:], _ body: (DLNATestBed) async throws -> Void) async throws {
        let bed = try await DLNATestBed(environment: environment)
        try await withTearDown { try await body(bed) } tearDown: { await bed.tearDown() }
    }

    private init(environment: [String: String]) async throws {
        harness = try SupervisorHarness()
        network = try await PrivateNetwork.create()
        do {
            let command = network.controllerCommandPrefix + [DaemonHarness.binary("mediaroute-dlna-driver")]
            let manifest: JSONValue = [
                "protocol": .string(Self.protocolID),
                "exportedType": ["identifier": .string(Self.protocolID), "conformsTo": ["public.media-sharing-protocol"], "description": "UPnP/DLNA"],
                "executable": .string(command[0]), "arguments": .array(command.dropFirst().map { .string($0) }),
                "environment": .object(JSONObject([(key: "SWIFT_BACKTRACE", value: "enable=no")] + environment.sorted { $0.key < $1.key }.map { (key: $0.key, value: .string($0.value)) })),
                "restart": ["intensity": 5, "periodSeconds": 60, "initialBackoffMilliseconds": 50, "maximumBackoffMilliseconds": 500],
            ]
            try Data(JSONWriter.encode(manifest)).write(to: URL(fileURLWithPath: harness.drivers + "/dlna.json"))
            server = try await harness.startServing(at: socket)
        } catch {
            await tearDown()
            throw error
        }
    }

    /// A renderer on a host of its own on the LAN (with `uuid`, the same renderer moved to another address).
    func addRenderer(_ name: String, uuid: String = UUID().uuidString.lowercased()) async throws -> PrivateRenderer {
        let host = try await network.addHost()
        let renderer = try await PrivateRenderer.start(on: host, name: name, uuid: uuid)
        renderers.append(renderer)
        return renderer
    }

    func app(_ applicationIdentifier: String = "org.test.app") -> AVSystemRouteController {
        apps.make(applicationIdentifier, protocols: [Self.protocolID])
    }

    /// Waits until a picker (opened for that and closed again) lists `name`, and returns its entry.
    @discardableResult
    func listed(_ name: String) async throws -> PickerEntry {
        let view = PickerView()
        let picker = await supervisor.openPicker { view.update($0) }
        var entry = picker.entries.first { $0.name == name }
        if entry == nil {
            try await harness.waitUntil("picker lists \(name)", seconds: 15) { view.names().contains(name) }
            entry = view.current.first { $0.name == name }
        }
        await supervisor.closePicker(picker.id)
        return try #require(entry)
    }

    /// A renderer listed, then activated by the operator.
    @discardableResult
    func activated(_ name: String) async throws -> RouteDescription {
        try await listed(name)
        return try await supervisor.activate(name) { _ in nil }
    }

    /// A tap on `renderer`'s interface showing the GENA requests that cross it, stopped with the bed.
    func wireTap(on renderer: PrivateRenderer) async throws -> GENAWireTap {
        let tap = try await GENAWireTap.start(on: renderer.host, directory: harness.root)
        taps.append(tap)
        return tap
    }

    /// Invokes an action on a renderer as a second control point would: curl from the controller
    /// namespace, the SOAP body written out by hand (not through our library).
    func controlPoint(_ renderer: PrivateRenderer, service: String, _ action: String, _ arguments: [(String, String)]) async throws -> String {
        let control = service == "AVTransport" ? "rendertransport1" : service == "RenderingControl" ? "rendercontrol1" : "renderconnmgr1"
        let type = "urn:schemas-upnp-org:service:\(service):1"
        let body = "<?xml version=\"1.0\"?><s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\" s:encodingStyle=\"http://schemas.xmlsoap.org/soap/encoding/\"><s:Body>"
            + "<u:\(action) xmlns:u=\"\(type)\">" + arguments.map { "<\($0.0)>\($0.1)</\($0.0)>" }.joined() + "</u:\(action)></s:Body></s:Envelope>"
        let url = "http://\(renderer.host.address):\(renderer.port)/upnp/control/\(control)"
        let result = try await network.run(["/usr/bin/curl", "-sS", "--max-time", "5", "-H", "Content-Type: text/xml; charset=\"utf-8\"",
                                            "-H", "SOAPACTION: \"\(type)#\(action)\"", "--data-binary", body, url], in: network.controllerNamespace)
        return result.standardOutput
    }

    /// A GENA request to one of `renderer`'s event URLs (`service` as in `controlPoint`) as another
    /// control point would make it: curl from the controller namespace. Returns the HTTP status
    /// and the SID the renderer answered with, if any.
    func gena(_ method: String, _ renderer: PrivateRenderer, service: String, headers: [String]) async throws -> (status: Int, sid: String?) {
        let event = service == "AVTransport" ? "rendertransport1" : "rendercontrol1"
        let url = "http://\(renderer.host.address):\(renderer.port)/upnp/event/\(event)"
        let result = try await network.run(["/usr/bin/curl", "-sS", "--max-time", "5", "-X", method, "-D", "-", "-o", "/dev/null"]
                                           + headers.flatMap { ["-H", $0] } + [url], in: network.controllerNamespace)
        let lines = result.standardOutput.split(separator: "\r\n")
        let status = lines.first.flatMap { $0.split(separator: " ").dropFirst().first }.flatMap { Int($0) } ?? 0
        let sid = lines.first { $0.uppercased().hasPrefix("SID:") }.map { $0.dropFirst(4).trimmingCharacters(in: .whitespaces) }
        return (status, sid)
    }

    /// One value out of a control point answer, e.g. `CurrentVolume`.
    static func value(_ name: String, in answer: String) -> String? {
        guard let start = answer.range(of: "<\(name)>"), let end = answer.range(of: "</\(name)>", range: start.upperBound..<answer.endIndex) else { return nil }
        return String(answer[start.upperBound..<end.lowerBound])
    }

    /// The renderer's transport state as it reports it to any control point.
    func transportState(_ renderer: PrivateRenderer) async -> String? {
        guard let answer = try? await controlPoint(renderer, service: "AVTransport", "GetTransportInfo", [("InstanceID", "0")]) else { return nil }
        return Self.value("CurrentTransportState", in: answer)
    }

    /// A media directory served over HTTP from the controller namespace (Python's http.server with
    /// byte ranges, stopped by PID with the bed), with a `seconds`-long 440 Hz tone `tone.wav`.
    func mediaServer(seconds: Double = 4) async throws -> (directory: String, url: String) {
        let directory = harness.root + "/media"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try await MediaFileServer.makeTone(at: directory + "/tone.wav", seconds: seconds, title: "Test Tone")
        let port = 8000 + Int(getpid() % 1000)
        let script = harness.root + "/range-media-server.py"
        try RangeMediaServer.source.write(toFile: script, atomically: true, encoding: .utf8)
        let quiet = open("/dev/null", O_WRONLY | O_CLOEXEC)
        defer { close(quiet) }
        let child = try ChildProcess(executable: network.controllerCommandPrefix[0],
                                     arguments: Array(network.controllerCommandPrefix.dropFirst()) + ["/usr/bin/python3", script, network.controllerAddress, String(port), directory],
                                     standardOutput: quiet, standardError: quiet)
        children.append(child)
        let base = "http://\(network.controllerAddress):\(port)"
        try await harness.waitUntil("the media server answers") {
            (try? await network.run(["/usr/bin/curl", "-sSI", "--max-time", "1", base + "/tone.wav"], in: network.controllerNamespace))?.termination == .exited(0)
        }
        return (directory, base)
    }

    func tearDown() async {
        await apps.invalidateAll()
        server?.close()
        await harness.tearDown()
        for child in children {
            child.signal(SIGTERM)
            _ = await child.exitStatus()
        }
        for tap in taps { await tap.stop() }
        for renderer in renderers { await renderer.stop() }
        await network.destroy()
    }
}
