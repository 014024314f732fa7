import ArgumentParser
import Foundation
import MediaRouteIPC
import Synchronization

struct Devices: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Open the route picker and list the devices drivers find.")
    @OptionGroup var options: GlobalOptions
    @Flag(help: "Keep the picker open and print the list each time it changes (Ctrl-C stops).") var watch = false
    // `.unconditional`: "--wait -1" is a value to refuse with a reason, not a missing one.
    @Option(parsing: .unconditional, help: "Seconds to let discovery run before listing.") var wait: Double = 2
    @Option(parsing: .unconditional, help: "List as soon as this many devices are found (at most --wait seconds).") var until: Int?

    func validate() throws {
        guard wait >= 0, wait <= 600 else { throw ValidationError("--wait must be from 0 to 600 seconds, not \(wait)") }
        if let until, until < 1 { throw ValidationError("--until must be at least 1, not \(until)") }
    }

    func run() async throws {
        let latest = Mutex<JSONValue>(.array([]))
        let (changes, continuation) = AsyncStream<JSONValue>.makeStream()
        let client = try await options.connect(onPickerChanged: { params in
            let entries = params["entries"] ?? .array([])
            latest.withLock { $0 = entries }
            continuation.yield(entries)
        })
        let opened = try await client.call("picker.open")
        latest.withLock { $0 = opened.objectValue?["entries"] ?? .array([]) }
        if watch {
            print(render(latest.withLock { $0 }))
            let interrupt = try Interrupt()
            Task {
                _ = await interrupt.wait()
                continuation.finish()
            }
            for await entries in changes { print("---\n" + render(entries)) }
            interrupt.restore()
        } else {
            let deadline = ContinuousClock.now + .milliseconds(Int(wait * 1000))
            if let until {
                while latest.withLock({ $0.arrayValue?.count ?? 0 }) < until, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(2))
                }
            } else {
                try await Task.sleep(until: deadline)
            }
            let entries = latest.withLock { $0 }
            options.output(entries) { render(entries) }
        }
        _ = try? await client.call("picker.close", ["picker": opened.objectValue?["picker"] ?? .null])
        await client.close()
    }

    /// url, audio, video: what a person scanning the list needs.
    static func shortName(_ capability: String) -> String {
        switch capability {
        case "urlPlayback": "url"
        case "realtimeAudioStreaming": "audio"
        case "realtimeVideoStreaming": "video"
        default: capability
        }
    }

    private func render(_ entries: JSONValue) -> String {
        if options.json { return String(decoding: JSONWriter.encode(entries), as: UTF8.self) }
        let rows = (entries.arrayValue ?? []).map { value -> [String] in
            let entry = value.objectValue ?? [:]
            let routes = entry["routes"]?.arrayValue ?? []
            let preferred = entry["preferredProtocol"]?.stringValue
            let first = routes.first?.objectValue?["device"]?.objectValue
            let protocols = routes.map { route -> String in
                let id = route.objectValue?["protocol"]?.stringValue ?? "?"
                return (route.objectValue?["protocolName"]?.stringValue ?? id) + (id == preferred && routes.count > 1 ? "*" : "")
            }
            return [entry["name"]?.stringValue ?? "?", first?["deviceType"]?.stringValue ?? "?",
                    (first?["capabilities"]?.arrayValue?.compactMap(\.stringValue) ?? []).map(Self.shortName).joined(separator: ", "), protocols.joined(separator: ", ")]
        }
        return rows.isEmpty ? "no devices found" : table(["DEVICE", "TYPE", "CAPABILITIES", "PROTOCOLS (* preferred)"], rows)
    }
}

struct Activate: SimpleCommand {
    static let configuration = CommandConfiguration(abstract: "Connect to a device (pairing if it asks), making it a route.")
    @OptionGroup var options: GlobalOptions
    @Argument(help: "The device's name (as `mediaroute devices` shows it) or id.") var device: String
    @Option(name: .customLong("protocol"), help: "Use this protocol instead of the device's preferred one.") var protocolID: String?
    @Option(help: "The pairing code or password, for scripts (otherwise you are asked).") var code: String?

    func validate() throws {
        if code?.isEmpty == true { throw ValidationError("--code must not be empty; leave it out to be asked for the code") }
    }

    func run() async throws {
        var params: JSONObject = ["device": .string(device)]
        if let protocolID { params["protocol"] = .string(protocolID) }
        let route = try await once("device.activate", params, pairingCode: code, timeout: .seconds(600))
        options.output(route) {
            let object = route.objectValue ?? [:]
            return "\(object["device"]?.objectValue?["displayName"]?.stringValue ?? device) is active through \(object["protocolName"]?.stringValue ?? "?") (\(object["session"]?.stringValue ?? "?"))"
        }
    }
}

struct Deactivate: SimpleCommand {
    static let configuration = CommandConfiguration(abstract: "Disconnect an active device.")
    @OptionGroup var options: GlobalOptions
    @Argument(help: "The device's name or id.") var device: String
    func run() async throws {
        _ = try await once("device.deactivate", ["device": .string(device)])
        options.output(.null) { "\(device) deactivated" }
    }
}

struct Prefer: SimpleCommand {
    static let configuration = CommandConfiguration(abstract: "Make a protocol the default for a device several drivers see (remembered).")
    @OptionGroup var options: GlobalOptions
    @Argument(help: "The device's name.") var device: String
    @Argument(help: "The protocol identifier to prefer.") var protocolID: String
    func run() async throws {
        _ = try await once("device.prefer", ["device": .string(device), "protocol": .string(protocolID)])
        options.output(.null) { "\(device) now prefers \(protocolID)" }
    }
}

struct Sessions: SimpleCommand {
    static let configuration = CommandConfiguration(abstract: "List active routes and what plays on them.")
    @OptionGroup var options: GlobalOptions
    func run() async throws {
        let result = try await once("routes.list")
        options.output(result) {
            let routes = result.objectValue?["routes"]?.arrayValue ?? []
            return routes.isEmpty ? "no active routes" : table(routeHeader, routes.map(describeRoute))
        }
    }
}
