import ArgumentParser
import Foundation
import MediaRouteIPC
import MediaRouteWire

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
        let (changes, continuation) = AsyncStream<Control.PickerChanged>.makeStream()
        let client = try await options.connect(onPickerChanged: { continuation.yield($0) })
        let opened = try await client.call(Control.OpenPicker())
        if watch {
            print(render(opened.entries))
            let interrupt = try Interrupt()
            Task {
                _ = await interrupt.wait()
                continuation.finish()
            }
            for await changed in changes where changed.picker == opened.picker { print("---\n" + render(changed.entries)) }
            interrupt.restore()
        } else {
            let entries = await Self.list(opened, changes: changes, atLeast: until, before: .now + .milliseconds(Int(wait * 1000)))
            options.output(entries) { render(entries) }
        }
        _ = try? await client.call(Control.ClosePicker(picker: opened.picker))
        await client.close()
    }

    /// The picker's list at `deadline`, or as soon as it holds `count` devices. Only the picker's own
    /// `picker.changed` wakes the wait: a device that appears is listed at once, with no polling interval.
    static func list(_ opened: Control.OpenPicker.Opened, changes: AsyncStream<Control.PickerChanged>, atLeast count: Int?,
                     before deadline: ContinuousClock.Instant) async -> [PickerLine] {
        await withTaskGroup(of: [PickerLine]?.self) { group in
            group.addTask {
                var latest = opened.entries
                func enough() -> Bool { count.map { latest.count >= $0 } ?? false }
                if enough() { return latest }
                // Ends with the latest list when the deadline cancels it.
                for await changed in changes where changed.picker == opened.picker {
                    latest = changed.entries
                    if enough() { break }
                }
                return latest
            }
            group.addTask {
                try? await Task.sleep(until: deadline)
                return nil
            }
            if let early = await group.next() ?? nil {
                group.cancelAll()
                return early
            }
            group.cancelAll()
            return await group.next().flatMap { $0 } ?? opened.entries
        }
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

    private func render(_ entries: [PickerLine]) -> String {
        if options.json { return String(decoding: JSONWriter.encode(WireEncoder.encode(entries)), as: UTF8.self) }
        let rows = entries.map { entry -> [String] in
            let first = entry.routes.first?.device
            let protocols = entry.routes.map { $0.protocolName + ($0.protocol == entry.preferredProtocol && entry.routes.count > 1 ? "*" : "") }
            return [entry.name, first?.deviceType.rawValue ?? "?", (first?.capabilities.names ?? []).map(Self.shortName).joined(separator: ", "),
                    protocols.joined(separator: ", ")]
        }
        return rows.isEmpty ? "no devices found" : table(["DEVICE", "TYPE", "CAPABILITIES", "PROTOCOLS (* preferred)"], rows)
    }
}
