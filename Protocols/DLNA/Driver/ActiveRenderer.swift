import Foundation
import MediaDevice
import MediaRouteIPC
import NIOCore
import Synchronization
import UPnP

/// An activated renderer: its services, its events (or polling when it will not send them), the
/// state they report, and the route's end when it goes away.
@MainActor
final class ActiveRenderer {
    let device: MediaOutputDevice
    let session: MediaOutputSession
    private(set) var renderer: KnownRenderer
    let endpoint: LocalEndpoint
    private let transport: SOAPService
    private let rendering: SOAPService
    private let client: HTTPClient
    /// Where play's answers are read, each request sent from the answer before: one loop, one thread.
    private let loop: any NIOCore.EventLoop

    /// What the renderer last reported (events, polls, or our own commands until it confirms).
    private(set) var transportState = "NO_MEDIA_PRESENT"
    private(set) var currentURI = ""
    private(set) var duration: Double?
    private(set) var position: Double = 0
    private var positionAt = ContinuousClock.now
    /// 0–100, the renderer's scale.
    private(set) var volumeLevel = 0
    private(set) var muted = false
    /// What we last set, so our own change echoed back in an event is not reported as the remote's.
    private var volumeSentLevels: Set<Int> = []

    var playback: RendererPlayback?
    /// Where the file being played is served from us, if it is one of ours.
    var mediaPath: String?
    /// Apps' live streams served to the renderer, by stream id.
    var streamPaths: [String: String] = [:]
    var liveStreams: [String: LivePCMStream] = [:]
    private var liveLatencyReported = false
    /// Told whenever the transport state, position or duration changed.
    var stateChanged: () -> Void = {}
    /// Told when the volume or mute changed at the renderer (its remote, another control point).
    var volumeChanged: () -> Void = {}
    /// Told once when the renderer is gone (the reason as a sentence).
    var gone: (String) -> Void = { _ in }

    private var subscriptions: [(subscription: GENASubscription, route: String)] = []
    /// Callback routes whose SUBSCRIBE is under way.
    private var pendingRoutes: Set<String> = []
    private var tasks: [Task<Void, Never>] = []
    /// Reading the transport state after Play, until it plays (`followTransition`).
    private var transition: Task<Void, Never>?
    /// `play` waiting for the renderer's first word after Play (`firstWord`).
    private var firstWordWait: FirstWordWait?
    private var plays = 0
    private var isEnded = false
    /// Consecutive unanswered requests: two in a row (a second apart) end the route.
    private var failures = 0
    /// Whether the renderer sends us events; if not, everything is polled.
    private(set) var isEvented = false
    /// Whether every service took our subscription at activation: only then can a renderer that
    /// lost its subscriptions go back to events (a service that refused is polled for good).
    private var subscribedToAll = false
    /// How long event subscriptions are asked for: `MEDIAROUTE_DLNA_EVENT_SECONDS` from the
    /// manifest's environment (2 s to a day), else 300 s. Tests of renewal make it short.
    static let eventSeconds = ProcessInfo.processInfo.environment["MEDIAROUTE_DLNA_EVENT_SECONDS"].flatMap(Int.init).map { min(max($0, 2), 86_400) }
        ?? GENASubscription.requestedSeconds
    /// How often an evented renderer with nothing playing is asked its state, to learn that it went
    /// away without a goodbye (switched off at the wall) long before its announcement runs out (its
    /// max-age: 100 s to 30 min): `MEDIAROUTE_DLNA_IDLE_CHECK_SECONDS` (1 s to an hour), else 10 s.
    static let idleCheckSeconds = ProcessInfo.processInfo.environment["MEDIAROUTE_DLNA_IDLE_CHECK_SECONDS"].flatMap(Int.init)
        .map { min(max($0, 1), 3600) } ?? 10

    init(renderer: KnownRenderer, session: MediaOutputSession, endpoint: LocalEndpoint, client: HTTPClient) {
        self.renderer = renderer
        device = renderer.device
        self.session = session
        self.endpoint = endpoint
        self.client = client
        loop = client.nextLoop()
        transport = SOAPService(renderer.description.avTransport, client: client)
        rendering = SOAPService(renderer.description.renderingControl, client: client)
    }

    var name: String { renderer.name }

    /// Reads the renderer's state and subscribes to its events; polls when it refuses them.
    func start() async throws(UPnPError) {
        try await readTransport()
        try await readVolume()
        var refusals: [String] = []
        for service in [renderer.description.avTransport, renderer.description.renderingControl] {
            guard let eventURL = service.eventURL else {
                refusals.append("\(service.type) has no eventSubURL")
                continue
            }
            let route = RandomToken.make()
            let path = endpoint.addEventRoute(route) { [weak self] request in await self?.notified(request, on: route) ?? .init(status: .preconditionFailed) }
            guard let callback = endpoint.url(path) else { continue }
            pendingRoutes.insert(route)
            defer { pendingRoutes.remove(route) }
            do {
                let subscription = try await GENASubscription.subscribe(eventURL, callback: callback, seconds: Self.eventSeconds, client: client)
                subscriptions.append((subscription, path))
            } catch {
                endpoint.removeEventRoute(path)
                refusals.append(error.description)
            }
        }
        isEvented = refusals.isEmpty
        subscribedToAll = isEvented
        if !isEvented { log("\(name): events unavailable (\(refusals.joined(separator: "; "))): polling its state every second instead") }
        tasks.append(Task { [weak self] in await self?.renewSubscriptions() })
        tasks.append(Task { [weak self] in await self?.poll() })
    }

    /// Ends subscriptions and polling; the renderer is left as it is.
    func shutDown() {
        isEnded = true
        tasks.forEach { $0.cancel() }
        tasks = []
        transition?.cancel()
        let client = self.client
        for (subscription, route) in subscriptions {
            endpoint.removeEventRoute(route)
            Task { await subscription.cancel(client: client) }
        }
        subscriptions = []
    }

    // MARK: Commands

    /// Runs an AVTransport action; a renderer that does not answer ends the route.
    @discardableResult
    func transport(_ action: String, _ arguments: KeyValuePairs<String, String> = [:]) async throws(UPnPError) -> [String: String] {
        try await checked { () async throws(UPnPError) in try await transport.invoke(action, arguments) }
    }

    @discardableResult
    func rendering(_ action: String, _ arguments: KeyValuePairs<String, String> = [:]) async throws(UPnPError) -> [String: String] {
        try await checked { () async throws(UPnPError) in try await rendering.invoke(action, arguments) }
    }

    private func checked(_ body: () async throws(UPnPError) -> [String: String]) async throws(UPnPError) -> [String: String] {
        do {
            let answer = try await body()
            failures = 0
            return answer
        } catch {
            if error.isUnreachable { end("\(name) stopped answering: \(error)") }
            throw error
        }
    }

    /// Whether the renderer answers at this route's address (a failure here does not end the route).
    func answers() async -> Bool {
        (try? await transport.invoke("GetTransportInfo", ["InstanceID": "0"])) != nil
    }

    /// Starts connecting to the renderer's AVTransport for the next `play`, on the event loop's
    /// thread while the caller makes ready what to play (a connect is a round trip: milliseconds
    /// on Wi-Fi; on a LAN close by, 50-100 µs of the connecting thread's time, which the main
    /// actor then spends on the metadata). Pass it to `play`, or close it.
    func connectionForPlay() -> HTTPClientSpareConnection? {
        let connection = client.spareConnection(to: transport.controlURL)
        if let connection { loop.execute { connection.open() } }
        return connection
    }

    /// Loads `url` and plays it from the start. SetAVTransportURI, Play and a first
    /// GetTransportInfo go out from one event loop, each as soon as the one before is answered (a
    /// hop through the main actor between two of them cost ~150 µs), over a connection made while
    /// the renderer carried out the one before (a connect is a round trip: milliseconds on
    /// Wi-Fi); SetAVTransportURI goes over `early`, if given (`connectionForPlay`). Returns once
    /// the renderer has said where it is after Play (its event saying PLAYING, or that reading,
    /// whichever comes first); `followTransition` reads on until it plays.
    func play(url: String, metadata: String, over early: HTTPClientSpareConnection? = nil) async throws(UPnPError) {
        transition?.cancel()
        // An older play still waiting for its first word returns now (and starts no reading).
        heardFirstWord()
        plays += 1
        let play = plays
        let transport = self.transport, loop = self.loop
        // Taken before the requests go: the renderer's events answering them are newer.
        let before = (transportState, currentURI, duration)
        currentURI = url
        duration = nil
        take(position: 0)
        transportState = "TRANSITIONING"
        let (toPlay, toRead) = (client.spareConnection(to: transport.controlURL), client.spareConnection(to: transport.controlURL))
        let played = transport.invocation("SetAVTransportURI", ["InstanceID": "0", "CurrentURI": url, "CurrentURIMetaData": metadata], on: loop,
                                          over: early, thenOpening: toPlay)
            .flatMap { _ in transport.invocation("Play", ["InstanceID": "0", "Speed": "1"], on: loop, over: toPlay, thenOpening: toRead) }
        let reading = played.flatMap { _ in transport.invocation("GetTransportInfo", ["InstanceID": "0"], on: loop, over: toRead) }
        // Closed unused when a request before them failed (`early` is its opener's to close).
        reading.whenComplete { _ in
            toPlay?.close()
            toRead?.close()
        }
        do {
            _ = try await checked { () async throws(UPnPError) in try await Self.answer(played) }
        } catch {
            if transportState == "TRANSITIONING", currentURI == url { (transportState, currentURI, duration) = before }
            throw error
        }
        stateChanged()
        await firstWord(after: play, reading: reading)
        // Superseded by a newer play or a stop while it waited: that one reads on, or nothing does.
        guard plays == play else { return }
        transition?.cancel()
        transition = Task { [weak self] in await self?.followTransition() }
    }

    /// Until the renderer says it plays (an event), or `reading` is answered and taken in. The
    /// answer resumes this wait from the event loop, which wakes the main actor once (a task
    /// made there to take it in, then this one resumed, cost two of its jobs).
    private func firstWord(after play: Int, reading: EventLoopFuture<[String: String]>) async {
        guard transportState != "PLAYING" else { return }
        heardFirstWord()
        let wait = FirstWordWait()
        firstWordWait = wait
        let answer = await withCheckedContinuation { continuation in
            wait.start(continuation)
            reading.whenComplete { result in wait.resume(with: try? result.get()) }
        }
        guard plays == play, let answer else { return }
        var event = RendererEvent()
        event.transportState = answer["CurrentTransportState"]
        apply(event)
    }

    private func heardFirstWord() {
        firstWordWait?.resume(with: nil)
        firstWordWait = nil
    }

    /// An answer chained on the event loop (`SOAPService.invocation`), as `invoke` would throw it.
    private static func answer(_ future: EventLoopFuture<[String: String]>) async throws(UPnPError) -> [String: String] {
        do {
            return try await future.get()
        } catch let error as UPnPError {
            throw error
        } catch {
            throw UPnPError(.unreachable, "\(error)")
        }
    }

    /// Stops what plays, and the reading of its start.
    func stop() async throws(UPnPError) {
        transition?.cancel()
        transition = nil
        plays += 1
        heardFirstWord()
        try await transport("Stop", ["InstanceID": "0"])
    }

    /// After Play and its first reading, reads the transport state until it plays (or 2 s pass):
    /// every 5 ms for the first 50 (most renderers start within a few; each reading is a connection
    /// of its own, and a TV's HTTP server is weak), then every 10. The event saying
    /// PLAYING comes when the renderer's eventing gets to it, often tens of milliseconds after
    /// the fact, and the person waits for that. (Some renderers still say STOPPED for a moment
    /// after accepting Play.)
    private func followTransition() async {
        let start = ContinuousClock.now
        let deadline = start + .seconds(2)
        let starting: Set<String> = ["TRANSITIONING", "STOPPED", "NO_MEDIA_PRESENT"]
        while !Task.isCancelled, !isEnded, starting.contains(transportState), ContinuousClock.now < deadline {
            try? await Task.sleep(for: .now - start < .milliseconds(50) ? .milliseconds(5) : .milliseconds(10))
            guard !Task.isCancelled, !isEnded, starting.contains(transportState) else { return }
            guard let info = try? await transport.invoke("GetTransportInfo", ["InstanceID": "0"]) else { return }
            var event = RendererEvent()
            event.transportState = info["CurrentTransportState"]
            apply(event)
        }
    }

    func setVolume(_ level: Int) async throws(UPnPError) {
        let level = min(max(level, 0), 100)
        volumeSentLevels.insert(level)
        volumeLevel = level
        try await rendering("SetVolume", ["InstanceID": "0", "Channel": "Master", "DesiredVolume": String(level)])
    }

    func setMuted(_ mute: Bool) async throws(UPnPError) {
        muted = mute
        try await rendering("SetMute", ["InstanceID": "0", "Channel": "Master", "DesiredMute": mute ? "1" : "0"])
    }

    // MARK: State

    /// The position now: extrapolated while playing between the renderer's reports.
    var currentPosition: Double {
        guard transportState == "PLAYING" else { return position }
        let moved = position + (ContinuousClock.now - positionAt).seconds
        return duration.map { min(moved, $0) } ?? moved
    }

    func take(position seconds: Double) {
        position = seconds
        positionAt = .now
    }

    func take(transportState state: String) {
        transportState = state
    }

    private func apply(_ event: RendererEvent) {
        var stateMoved = false
        if let state = event.transportState, state != transportState {
            if transportState == "PLAYING" { take(position: currentPosition) } else { positionAt = .now }
            transportState = state
            stateMoved = true
            if state == "PLAYING" { heardFirstWord() }
        }
        if let uri = event.currentURI, uri != currentURI { currentURI = uri; stateMoved = true }
        if let seconds = event.duration, seconds != duration, seconds > 0 { duration = seconds; stateMoved = true }
        if let seconds = event.position { take(position: seconds); stateMoved = true }
        if stateMoved { stateChanged() }
        var volumeMoved = false
        if let level = event.volume {
            let ours = volumeSentLevels.remove(level) != nil
            if level != volumeLevel {
                volumeLevel = level
                volumeMoved = !ours
            }
        }
        if let mute = event.muted, mute != muted { muted = mute; volumeMoved = true }
        if volumeMoved { volumeChanged() }
    }

    /// A NOTIFY on one of our callback paths. The renderer sends the first one (all the state)
    /// as soon as it has answered SUBSCRIBE, often before that answer is read here: on a path
    /// still waiting for its SID, any SID is taken (the path is ours and unguessable). Refusing it
    /// with 412 makes some renderers drop the subscription altogether.
    private func notified(_ request: HTTPServer.Request, on route: String) -> HTTPServer.Response {
        let path = endpoint.eventPath(route)
        guard let sid = request.headers.first(name: "SID"),
              pendingRoutes.contains(route) || subscriptions.contains(where: { $0.route == path && $0.subscription.sid == sid }) else {
            return .init(status: .preconditionFailed)
        }
        do {
            apply(try RendererEvent(propertySet: request.body, from: name))
        } catch {
            log("\(name): ignoring an event: \(error)")
            return .init(status: .badRequest)
        }
        return .init(status: .ok)
    }

    /// Reads the transport state and media (a failure is the caller's to count: `poll` ends the
    /// route after two in a row, not at the first).
    private func readTransport() async throws(UPnPError) {
        let info = try await transport.invoke("GetTransportInfo", ["InstanceID": "0"])
        var event = RendererEvent()
        event.transportState = info["CurrentTransportState"]
        let media = try await transport.invoke("GetMediaInfo", ["InstanceID": "0"])
        event.currentURI = media["CurrentURI"]
        event.duration = media["MediaDuration"].flatMap(UPnPTime.seconds)
        apply(event)
    }

    private func readVolume() async throws(UPnPError) {
        var event = RendererEvent()
        event.volume = Int(try await rendering.invoke("GetVolume", ["InstanceID": "0", "Channel": "Master"])["CurrentVolume"] ?? "")
        let mute = try await rendering.invoke("GetMute", ["InstanceID": "0", "Channel": "Master"])["CurrentMute"]
        event.muted = mute.map { $0 == "1" || $0.lowercased() == "true" }
        apply(event)
    }

    /// Positions are not evented (AVTransport moderates them away): read each second while
    /// something is loaded. Without events, the transport state and volume are read too; with
    /// them and nothing playing, the state every `idleCheckSeconds`. Two unanswered reads in a
    /// row mean the renderer is gone.
    private func poll() async {
        var idleSeconds = 0
        while !Task.isCancelled, !isEnded {
            try? await Task.sleep(for: .seconds(1))
            guard !Task.isCancelled, !isEnded else { return }
            do {
                if !isEvented {
                    try await readTransport()
                    try await readVolume()
                    failures = 0
                }
                guard transportState == "PLAYING" || transportState == "PAUSED_PLAYBACK" || transportState == "TRANSITIONING" || !isEvented else {
                    // Nothing plays and events would say any change: now and then, is it still there?
                    idleSeconds += 1
                    if idleSeconds >= Self.idleCheckSeconds {
                        idleSeconds = 0
                        try await readTransport()
                        failures = 0
                    }
                    continue
                }
                idleSeconds = 0
                let info = try await transport.invoke("GetPositionInfo", ["InstanceID": "0"])
                failures = 0
                var event = RendererEvent()
                event.position = info["RelTime"].flatMap(UPnPTime.seconds)
                event.duration = info["TrackDuration"].flatMap(UPnPTime.seconds)
                if event.position != nil, abs((event.position ?? 0) - currentPosition) < 0.5 { event.position = nil }
                apply(event)
                reportLiveLatency()
            } catch where error.isUnreachable {
                failures += 1
                if failures >= 2 { end("\(name) stopped answering: \(error)") }
            } catch {
                log("\(name): \(error)")
            }
        }
    }

    /// Once a live stream has played two seconds: how far behind the app the renderer plays
    /// (what it fetched and has not played), for the operator. Renderers buffer from under a
    /// second to several, and say nothing of it themselves.
    private func reportLiveLatency() {
        guard !liveLatencyReported, transportState == "PLAYING", currentPosition >= 2, let live = liveStreams.values.first else { return }
        liveLatencyReported = true
        let held = live.servedSeconds - currentPosition
        log("\(name) plays live audio \(Int((held * 1000).rounded())) ms after it is written (fetched and not yet played)")
    }

    /// Renews each subscription halfway through its time; a renderer that forgot it (rebooted
    /// between two of our requests) is subscribed afresh, and while that fails the state is
    /// polled, until a new subscription takes again.
    private func renewSubscriptions() async {
        while !Task.isCancelled, !isEnded {
            // Polling after a failed renewal: subscribing again is tried each minute at least.
            let delay = min(subscriptions.map(\.subscription.renewalDelay).min() ?? .seconds(60), isEvented ? .seconds(86_400) : .seconds(60))
            try? await Task.sleep(for: delay)
            guard !Task.isCancelled, !isEnded else { return }
            var allSubscribed = subscribedToAll
            for (subscription, route) in subscriptions {
                // Each answer is taken only if the route is still there and this subscription in it.
                func replace(with fresh: GENASubscription) {
                    guard !isEnded, let index = subscriptions.firstIndex(where: { $0.route == route }) else {
                        // The route ended while it was made: the renderer must not keep sending to us.
                        Task { [client] in await fresh.cancel(client: client) }
                        return
                    }
                    subscriptions[index].subscription = fresh
                }
                do {
                    replace(with: try await subscription.renewed(client: client))
                } catch {
                    log("\(name): renewing the event subscription failed (\(error)); subscribing again")
                    let token = String(route.dropFirst(endpoint.eventPath("").count))
                    pendingRoutes.insert(token)
                    defer { pendingRoutes.remove(token) }
                    do throws(UPnPError) {
                        guard let callback = endpoint.url(route) else { throw UPnPError(.unreachable, "no address of ours reaches \(name) for its events") }
                        replace(with: try await GENASubscription.subscribe(subscription.eventURL, callback: callback, seconds: Self.eventSeconds, client: client))
                    } catch {
                        guard !isEnded else { return }
                        allSubscribed = false
                        if isEvented { log("\(name): events unavailable (\(error)): polling its state every second instead") }
                        isEvented = false
                    }
                }
            }
            if allSubscribed, !isEvented, !isEnded {
                isEvented = true
                log("\(name): events are back: polling stops")
            }
        }
    }

    /// The renderer is gone: say so once.
    func end(_ reason: String) {
        guard !isEnded else { return }
        shutDown()
        gone(reason)
    }
}

/// A play's wait for the renderer's first word after Play: resumed once, by whichever comes
/// first: the reading's answer (on the event loop), or an event, a newer play or a stop (on the
/// main actor), which resume it with nil.
private final class FirstWordWait: Sendable {
    private let continuation = Mutex<CheckedContinuation<[String: String]?, Never>?>(nil)

    func start(_ continuation: CheckedContinuation<[String: String]?, Never>) {
        self.continuation.withLock { $0 = continuation }
    }

    func resume(with answer: [String: String]?) {
        continuation.withLock { $0.take() }?.resume(returning: answer)
    }
}
