import AvahiDiscovery
import DACP
import DBus
import Foundation
import PrivateDaemons
import RAOP
import Synchronization
import Testing
import TestSupport

/// The remote control of a real receiver, shairport-sync 3.3.8 (built with its D-Bus interface):
/// a sender streams to it, our `DACPServer` is published under the sender's DACP-ID on the
/// receiver's Avahi, and the receiver's own `org.gnome.ShairportSync.RemoteControl` methods, called
/// on its private bus, send DACP requests that must arrive here in order. Needs root (the
/// receiver's Avahi daemon runs in a network namespace).
@Suite(.serialized) struct DACPReceiverTests {
    static let destination = "org.gnome.ShairportSync"
    static let path: DBusObjectPath = "/org/gnome/ShairportSync"
    static let remoteControl = "org.gnome.ShairportSync.RemoteControl"

    /// The DACP-ID and Active-Remote the receiver read off the sender's SETUP (its log at level 2 and up).
    static func seenSession(in receiver: PrivateAirPlayReceiver, after offset: Int, within limit: Duration) async throws -> DACPSession {
        let deadline = ContinuousClock.now + limit
        while true {
            let log = String(receiver.log.utf8.dropFirst(offset)) ?? ""
            if let id = value(after: "DACP-ID string seen: \"", in: log), let remote = value(after: "Active-Remote string seen: \"", in: log) {
                return try DACPSession(dacpID: id, activeRemote: remote)
            }
            guard ContinuousClock.now < deadline else { throw ProbeError("the receiver logged no DACP-ID and Active-Remote; its log:\n\(log.suffix(3000))") }
            try await Task.sleep(for: .milliseconds(20))  // polling the receiver's log file for a line it writes
        }
    }

    static func value(after marker: String, in log: String) -> String? {
        guard let start = log.range(of: marker)?.upperBound, let end = log[start...].firstIndex(of: "\"") else { return nil }
        return String(log[start..<end])
    }

    /// Waits until the receiver says its DACP server (ours) is available: it found the service by
    /// its name and its probe (`getproperty`) was answered.
    static func waitUntilAvailable(_ bus: DBusConnection, within limit: Duration) async throws -> Duration {
        let start = ContinuousClock.now
        while true {
            let available = try? await bus.property("Available", of: remoteControl, at: path, on: destination).bool
            if available == true { return ContinuousClock.now - start }
            guard ContinuousClock.now - start < limit else { throw ProbeError("the receiver's RemoteControl.Available stayed false for \(limit)") }
            try await Task.sleep(for: .milliseconds(50))  // polling a D-Bus property the receiver changes
        }
    }

    /// A streaming session to `receiver` and the DACP values the receiver read off it.
    static func startSession(to receiver: PrivateAirPlayReceiver) async throws -> (RAOPSender, RAOPSenderConfiguration, DACPSession) {
        let configuration = RAOPSenderConfiguration(host: receiver.host, port: receiver.port)
        let sender = RAOPSender(configuration: configuration)
        let offset = receiver.log.utf8.count
        try await sender.start()
        do {
            return (sender, configuration, try await seenSession(in: receiver, after: offset, within: .seconds(5)))
        } catch {
            await sender.teardown()
            throw error
        }
    }

    @Test(.timeLimit(.minutes(1))) func shairportSyncsRemoteControlReachesTheServerInOrder() async throws {
        let receiver = try await PrivateAirPlayReceiver.start(logLevel: 3)
        try await withTearDown {
            let (sender, configuration, session) = try await Self.startSession(to: receiver)
            // Silence in real time for as long as the test runs: the session stays active.
            let streaming = Task {
                let half = [Int16](repeating: 0, count: 22050 * 2)
                while !Task.isCancelled { try await sender.send(pcm: half) }
            }
            let log = CommandLog()
            let published = Mutex<[String]>([])
            var server: DACPServer?, avahiConnection: AvahiConnection?, busConnection: DBusConnection?
            try await withTearDown {
                // libavahi-client finds the daemon through the system bus address: the receiver's private one.
                let avahi = try SystemBusEnvironment.with(receiver.busAddress) { try AvahiConnection() }
                avahiConnection = avahi
                let bus = try await DBusConnection.connect(address: receiver.busAddress)
                busConnection = bus
                // The receiver read the DACP-ID and Active-Remote the configuration gave.
                #expect(session.dacpID == configuration.dacpID && session.activeRemote == configuration.activeRemote)
                let started = ContinuousClock.now
                server = try await DACPServer.start(session: session, host: "127.0.0.1", avahi: avahi,
                                                    onPublication: { event in published.withLock { $0.append("\(event)") } },
                                                    onRefused: log.refused, handler: log.record)
                let port = server!.port
                // What a DACP browser sees: our service by its name, port and TXT, on the receiver's Avahi.
                let (services, sightings) = AsyncStream.makeStream(of: ResolvedService.self)
                let browse = ServiceBrowse(type: "_dacp._tcp", on: avahi) { event in
                    if case .found(let service) = event { sightings.yield(service) }
                }
                defer { browse.cancel(); sightings.finish() }
                do {
                    _ = try await Self.waitUntilAvailable(bus, within: .seconds(20))
                } catch {
                    let lines = receiver.log.split(separator: "\n").filter { $0.lowercased().contains("dacp") }.suffix(40)
                    Issue.record("\(error); publication: \(published.withLock { $0 }); refusals: \(log.refusals); the receiver's DACP log:\n\(lines.joined(separator: "\n"))")
                    throw error
                }
                let found = ContinuousClock.now - started
                let browsed = await next(1, of: services, within: .seconds(10)).first
                #expect(browsed?.name == session.serviceName && browsed?.port == UInt16(port))
                #expect(browsed?.txt == ["txtvers": "1", "Ver": "131073", "DbId": session.dacpID, "OSsi": "0x1F5"], "\(String(describing: browsed))")

                let calls: [(String, [DBusValue], DACPCommand)] = [
                    ("Play", [], .play), ("Pause", [], .pause), ("PlayPause", [], .playPause), ("Next", [], .nextItem), ("Previous", [], .previousItem),
                    ("VolumeUp", [], .volumeUp), ("VolumeDown", [], .volumeDown), ("ToggleMute", [], .muteToggle), ("FastForward", [], .beginFastForward),
                    ("Resume", [], .playResume), ("Rewind", [], .beginRewind), ("Resume", [], .playResume),
                    ("SetAirplayVolume", [.double(-15)], .setVolume(dB: -15)), ("SetAirplayVolume", [.double(-144)], .setVolume(dB: -144)),
                    ("Stop", [], .stop),
                ]
                var durations: [Duration] = []
                for (method, arguments, _) in calls {
                    let before = ContinuousClock.now
                    try await bus.call(destination: Self.destination, path: Self.path, interface: Self.remoteControl, method: method, arguments,
                                       timeout: .seconds(5))
                    durations.append(ContinuousClock.now - before)
                }
                let received = await next(calls.count, of: log.stream, within: .seconds(10))
                #expect(received == calls.map(\.2), "refusals: \(log.refusals); receiver log:\n\(receiver.log.suffix(3000))")

                // A volume out of AirPlay's range, sent by the receiver itself: refused (400), reported nowhere.
                try await bus.call(destination: Self.destination, path: Self.path, interface: Self.remoteControl, method: "SetAirplayVolume", [.double(6)],
                                   timeout: .seconds(5))
                // (shairport-sync's own periodic `getproperty` may be refused after it.)
                #expect(log.refusals.contains { $0.code == .badValue && $0.message.contains("6.000000 dB") }, "\(log.refusals)")
                // A request with a wrong Active-Remote, from a client of our own: refused, reported nowhere.
                let wrong = String(UInt32(session.activeRemote)! &+ 1)
                let refusedBefore = log.refusals.count
                let answer = try HTTPProbe.get("/ctrl-int/1/play", port: port, activeRemote: wrong)
                #expect(answer.status == 403)
                #expect(log.refusals.dropFirst(refusedBefore).contains { $0.code == .forbidden })
                try await bus.call(destination: Self.destination, path: Self.path, interface: Self.remoteControl, method: "Next", timeout: .seconds(5))
                #expect(await next(1, of: log.stream, within: .seconds(5)) == [.nextItem])
                #expect(log.commands == calls.map(\.2) + [.nextItem])
                // The receiver's own probe of our server, answered 400 (a DACP server, not an advanced one).
                #expect(log.refusals.contains { $0.code == .unknownCommand && $0.message.contains("getproperty") })
                #expect(published.withLock { $0 }.contains { $0.contains("established") && $0.contains(session.serviceName) })
                // What the receiver made of our answers (its log at level 3): 204 for each command, read to
                // the end at once (no 495, its code for an answer it gave up reading).
                let outcomes = receiver.log.split(separator: "\n").filter { $0.contains("dacp_send_command:") && $0.contains("response code") }
                let commandOutcomes = outcomes.filter { !$0.contains("getproperty") }
                #expect(commandOutcomes.filter { $0.contains("response code 204") }.count == calls.count + 1, "\(commandOutcomes.joined(separator: "\n"))")
                #expect(!outcomes.contains { $0.contains("response code 495") }, "\(outcomes.joined(separator: "\n"))")
                print("DACP with shairport-sync: \(session.serviceName) found and probed \(found) after the server started; \(calls.count + 1) D-Bus commands arrived in order (each D-Bus call, with its HTTP exchange: median \(durations.sorted()[durations.count / 2]), slowest \(durations.max()!)); refused \(log.refusals.count) (\(log.refusals.filter { $0.code == .unknownCommand }.count) of them the receiver's getproperty probes, 1 volume out of range, 1 wrong Active-Remote)")
            } tearDown: {
                streaming.cancel()
                _ = await streaming.result
                await sender.teardown()
                await server?.stop()
                avahiConnection?.close()
                await busConnection?.close()
                log.finish()
            }
        } tearDown: {
            await receiver.stop()
        }
    }
}
