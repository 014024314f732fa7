import MediaDevice
import MediaRouteIPC
import MediaRouteWire

/// `wire-codec`: one `route.updated` notification (a route with its device and playback state, the
/// largest message apps get several times a second) written to frame bytes and read back into its
/// type, through the typed wire (Codable over our JSON reader and writer), against the same message
/// written and read by hand-written code over `JSONValue` (how the wire was handled before): what
/// naming each member once, in the type, costs per message.
struct WireCodecBenchmark {
    let iterations: Int
    let rounds = 10

    static let route: RouteDescription = {
        var state = PlaybackStatus()
        state.isPlaying = true
        state.state = .playing
        state.position = 42.5
        state.volume = 0.3
        state.timeRange = 0...183.2
        state.audioOptions = ["English", "Français"]
        state.selectedAudioOption = "English"
        state.metadata = AVInterfaceMetadata(title: "Test Pattern", artist: "MediaRoute", album: "Benchmarks")
        let device = MediaOutputDevice(id: "org.mediaroute.reference/5e1f", displayName: "Living Room TV", capabilities: [.urlPlayback, .realtimeAudioStreaming],
                                       deviceType: .tv, volumeControl: .absolute, canMute: true)!
        return RouteDescription(session: "s12", protocol: "org.mediaroute.reference", protocolName: "MediaRoute Reference", device: device,
                                simultaneousSessions: false, busy: true, parent: nil, application: "org.example.player", url: "http://127.0.0.1:8080/clip.mp4",
                                playback: SessionPlayback(status: state, revision: 7), volume: 0.3, muted: false, streams: nil)
    }()

    func run() async throws {
        print("wire-codec: a route.updated notification written to frame bytes and read back, \(iterations) times in \(rounds) rounds taking turns")
        let typedBytes = Message.notification(method: ToApp.RouteUpdated.method, params: ToApp.RouteUpdated(route: Self.route).params, descriptorCount: 0).encode()
        let handBytes = Message.notification(method: ToApp.RouteUpdated.method, params: HandWritten.params(Self.route), descriptorCount: 0).encode()
        guard typedBytes == handBytes else { throw BenchmarkError("the two encodings differ:\n\(String(decoding: typedBytes, as: UTF8.self))\n\(String(decoding: handBytes, as: UTF8.self))") }
        print("  \(typedBytes.count)-byte body")
        var (typed, hand): ([UInt64], [UInt64]) = ([], [])
        let perRound = max(1, iterations / rounds)
        for _ in 0..<rounds {
            hand.append(try time(perRound) {
                let body = Message.notification(method: ToApp.RouteUpdated.method, params: HandWritten.params(Self.route), descriptorCount: 0).encode()
                guard case .notification(_, let params?, _) = try Message.decode(body) else { throw BenchmarkError("not a notification") }
                return try HandWritten.route(params).session.count
            })
            typed.append(try time(perRound) {
                let body = Message.notification(method: ToApp.RouteUpdated.method, params: ToApp.RouteUpdated(route: Self.route).params, descriptorCount: 0).encode()
                guard case .notification(_, let params?, _) = try Message.decode(body) else { throw BenchmarkError("not a notification") }
                return try ToApp.RouteUpdated.decode(params).route.session.count
            })
        }
        let handPer = Double(hand.sorted()[rounds / 2]) / Double(perRound) / 1000
        let typedPer = Double(typed.sorted()[rounds / 2]) / Double(perRound) / 1000
        print("  hand-written over JSONValue: \(format(handPer)) µs per message (median round)")
        print("  typed (Codable over JSONValue): \(format(typedPer)) µs per message (median round)")
        printResult("wire-codec", ratio: typedPer / handPer, target: 3)
    }

    private func time(_ count: Int, _ body: () throws -> Int) throws -> UInt64 {
        var sink = 0
        let start = now()
        for _ in 0..<count { sink &+= try body() }
        let elapsed = now() - start
        if sink == -1 { print(sink) }
        return elapsed
    }
}

/// The baseline: the same message by hand, member by member, as the code read and wrote it before.
private enum HandWritten {
    static func params(_ route: RouteDescription) -> JSONObject {
        let d = route.device
        var device: JSONObject = ["id": .string(d.id), "displayName": .string(d.displayName), "capabilities": .array(d.capabilities.names.map { .string($0) }),
                                  "deviceType": .string(d.deviceType.rawValue), "volumeControl": .string(d.volumeControl.rawValue), "canMute": .bool(d.canMute)]
        if !d.requiredNetworkEndpoints.isEmpty { device["requiredNetworkEndpoints"] = .array([]) }
        var object: JSONObject = ["session": .string(route.session), "protocol": .string(route.protocol), "protocolName": .string(route.protocolName),
                                  "device": .object(device), "simultaneousSessions": .bool(route.simultaneousSessions), "busy": .bool(route.busy)]
        if let parent = route.parent { object["parent"] = .string(parent) }
        if let application = route.application { object["application"] = .string(application) }
        if let url = route.url { object["url"] = .string(url) }
        if let playback = route.playback { object["playback"] = .object(state(playback)) }
        if let volume = route.volume { object["volume"] = .double(Double(volume.description) ?? Double(volume)) }
        if let muted = route.muted { object["muted"] = .bool(muted) }
        return ["route": .object(object)]
    }

    static func state(_ playback: SessionPlayback) -> JSONObject {
        let s = playback.status
        func float(_ f: Float) -> JSONValue { .double(Double(f.description) ?? Double(f)) }
        var metadata = JSONObject()
        if let title = s.metadata.title { metadata["title"] = .string(title) }
        if let artist = s.metadata.artist { metadata["artist"] = .string(artist) }
        if let album = s.metadata.album { metadata["album"] = .string(album) }
        if let artworkURL = s.metadata.artworkURL { metadata["artworkURL"] = .string(artworkURL) }
        var object: JSONObject = ["isPlaying": .bool(s.isPlaying), "state": .string(s.state.rawValue), "position": .double(s.position),
                                  "speed": float(s.speed), "volume": float(s.volume), "muted": .bool(s.isMuted)]
        if let range = s.timeRange { object["timeRange"] = [.double(range.lowerBound), .double(range.upperBound)] }
        object["audioOptions"] = .array(s.audioOptions.map { .string($0) })
        if let selected = s.selectedAudioOption { object["selectedAudioOption"] = .string(selected) }
        object["subtitleOptions"] = .array(s.subtitleOptions.map { .string($0) })
        if let selected = s.selectedSubtitleOption { object["selectedSubtitleOption"] = .string(selected) }
        object["metadata"] = .object(metadata)
        object["revision"] = .integer(playback.revision)
        return object
    }

    static func route(_ params: JSONObject) throws -> RouteDescription {
        func bad(_ what: String) -> BenchmarkError { BenchmarkError("bad \(what)") }
        guard let o = params["route"]?.objectValue, let session = o["session"]?.stringValue, let proto = o["protocol"]?.stringValue,
              let protocolName = o["protocolName"]?.stringValue, let d = o["device"]?.objectValue, let busy = o["busy"]?.boolValue,
              let simultaneous = o["simultaneousSessions"]?.boolValue else { throw bad("route") }
        guard let id = d["id"]?.stringValue, let name = d["displayName"]?.stringValue,
              let capabilities = d["capabilities"]?.arrayValue.flatMap({ MediaOutputDevice.Capabilities(names: $0.compactMap(\.stringValue)) }),
              let type = d["deviceType"]?.stringValue.flatMap(MediaOutputDevice.DeviceType.init(rawValue:)),
              let control = d["volumeControl"]?.stringValue.flatMap(MediaOutputDevice.VolumeControl.init(rawValue:)),
              let device = MediaOutputDevice(id: id, displayName: name, capabilities: capabilities, deviceType: type, volumeControl: control,
                                             canMute: d["canMute"]?.boolValue ?? false) else { throw bad("device") }
        var playback: SessionPlayback?
        if let p = o["playback"]?.objectValue {
            var s = PlaybackStatus()
            s.isPlaying = p["isPlaying"]?.boolValue ?? false
            s.state = p["state"]?.stringValue.flatMap(AVInterfacePlaybackState.init(rawValue:)) ?? .stopped
            s.position = p["position"]?.doubleValue ?? 0
            s.speed = Float(p["speed"]?.doubleValue ?? 1)
            s.volume = Float(p["volume"]?.doubleValue ?? 1)
            s.isMuted = p["muted"]?.boolValue ?? false
            if let r = p["timeRange"]?.arrayValue, r.count == 2, let low = r[0].doubleValue, let high = r[1].doubleValue, low <= high { s.timeRange = low...high }
            s.audioOptions = p["audioOptions"]?.arrayValue?.compactMap(\.stringValue) ?? []
            s.selectedAudioOption = p["selectedAudioOption"]?.stringValue
            s.subtitleOptions = p["subtitleOptions"]?.arrayValue?.compactMap(\.stringValue) ?? []
            s.selectedSubtitleOption = p["selectedSubtitleOption"]?.stringValue
            let m = p["metadata"]?.objectValue ?? [:]
            s.metadata = AVInterfaceMetadata(title: m["title"]?.stringValue, artist: m["artist"]?.stringValue, album: m["album"]?.stringValue,
                                             artworkURL: m["artworkURL"]?.stringValue)
            playback = SessionPlayback(status: s, revision: p["revision"]?.integerValue ?? 0)
        }
        return RouteDescription(session: session, protocol: proto, protocolName: protocolName, device: device, simultaneousSessions: simultaneous,
                                busy: busy, parent: o["parent"]?.stringValue, application: o["application"]?.stringValue, url: o["url"]?.stringValue,
                                playback: playback, volume: o["volume"]?.doubleValue.map(Float.init), muted: o["muted"]?.boolValue, streams: nil)
    }
}
