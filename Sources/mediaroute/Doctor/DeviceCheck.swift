import Foundation
import MediaRouteIPC
import MediaRouteWire

/// For one device: is it in the picker, does its protocol hear it on the network, and if it is
/// heard but not listed, why (its driver absent, disabled, failed, or its log saying why it
/// refused it); its route, and what was last said of it.
struct DeviceCheck {
    let device: String
    let socket: String?
    let daemon: DaemonCheck.Answer?
    let avahi: AvahiProbe.Outcome
    let renderers: [SSDPProbe.Renderer]
    let wait: Duration

    static let dlna = "org.mediaroute.dlna"

    func run() async -> [Diagnosis] {
        var diagnoses: [Diagnosis] = []
        let sightings = self.sightings()
        let drivers = daemon?.status.drivers ?? []
        var logLines: [DriverLogLine] = []
        var entry: PickerLine?
        if let daemon {
            entry = await findInPicker()
            logLines = (try? await daemon.client.call(Control.DriverLog(), timeout: .seconds(5)).lines) ?? []
        }
        let said = logLines.filter { line in
            DeviceSighting.mentions(line.text, device) || sightings.contains { !$0.address.isEmpty && line.text.contains($0.address) }
        }
        let heard = sightings.map(\.how)

        if daemon == nil {
            diagnoses.append(Diagnosis("device", device, .skipped, "the picker was not asked for \(device)", fix: "mediarouted does not answer (see above)"))
            diagnoses.append(sightings.isEmpty ? unheard() : Diagnosis("device", device, .ok, "\(device) is heard on the network", details: heard))
        } else if let entry {
            let protocols = entry.routes.map { $0.protocolName + ($0.protocol == entry.preferredProtocol && entry.routes.count > 1 ? " (preferred)" : "") }
            diagnoses.append(Diagnosis("device", device, .ok, "\(entry.name) is in the picker, through \(protocols.joined(separator: ", "))", details: heard))
        } else if sightings.isEmpty {
            diagnoses.append(unheard(inPickerAfter: wait))
        } else {
            for driverID in Set(sightings.map(\.driver)).sorted() {
                let how = sightings.filter { $0.driver == driverID }.map(\.how)
                let lines = said.filter { $0.protocol == driverID }.map { "[\($0.protocol), \($0.secondsAgo) s ago] \($0.text)" }
                let (finding, fix) = refusal(by: drivers.first { $0.protocol == driverID }, driverID, saidOf: lines)
                diagnoses.append(Diagnosis("device", device, .problem, "\(device) is heard on the network but not in the picker: \(finding)", fix: fix,
                                           details: how + lines))
            }
        }
        if let route = daemon?.status.routes.first(where: { DeviceSighting.same($0.device.displayName, device) || $0.device.id == device }) {
            let state = route.playback?.status.state.rawValue ?? "nothing playing"
            diagnoses.append(Diagnosis("device", device, .ok, "\(route.device.displayName) has an active route through \(route.protocolName) (session \(route.session), \(state)\(route.url.map { ", \($0)" } ?? ""))"))
        }
        let events = (daemon?.status.recentEvents ?? []).filter { DeviceSighting.mentions($0, device) }
        let lines = said.map { "[\($0.protocol), \($0.secondsAgo) s ago] \($0.text)" }
        if !events.isEmpty || (!lines.isEmpty && entry != nil) {
            let troubled = (events + lines).contains { text in Self.troubleWords.contains { text.lowercased().contains($0) } }
            diagnoses.append(Diagnosis("device", device, troubled ? .warning : .ok, "what was last said of \(device): route events and its driver's log",
                                       fix: troubled ? "read the lines below: they name what went wrong with it" : nil, details: events + (entry != nil ? lines : [])))
        }
        return diagnoses
    }

    /// Nothing on the network answers to the device's name.
    private func unheard(inPickerAfter discovery: Duration? = nil) -> Diagnosis {
        let names = seenNames()
        let picker = discovery.map { "\(device) is not in the picker after \($0) of discovery, and " } ?? ""
        return Diagnosis("device", device, .problem,
                         "\(picker)nothing on the network answers to \(device) (DNS-SD \(AvahiProbe.serviceTypes.keys.sorted().joined(separator: ", ")); SSDP MediaRenderers)",
                         fix: "check that it is on, on this network, and named so (Bluetooth devices are heard only through their driver, in the picker)",
                         details: (names.isEmpty ? [] : ["heard on the network: " + names.joined(separator: ", ")])
                             + (avahiUnavailable ? ["DNS-SD could not be asked: Avahi does not answer (see above)"] : []))
    }

    private var avahiUnavailable: Bool {
        if case .unavailable = avahi { return true }
        return false
    }

    /// Words of a line that reports trouble rather than news.
    static let troubleWords = ["fail", "error", "refus", "not listing", "ignoring", "cannot", "lost", "unreachable", "timed out", "ended"]

    /// Why a device heard on the network is not listed by the driver of its protocol.
    private func refusal(by driver: DriverReport?, _ driverID: String, saidOf lines: [String]) -> (String, String) {
        guard let driver else {
            return ("no driver for \(driverID) runs in mediarouted", "install its manifest (\(driverID).json) in one of mediarouted's drivers directories, then SIGHUP mediarouted")
        }
        switch DriverState(driver.state) {
        case .disabled: return ("its driver \(driverID) is disabled", "`mediaroute enable \(driverID)`")
        case .disabledByConfiguration: return ("its driver \(driverID) is disabled in the configuration file", DriverState.enableInConfiguration(driverID))
        case .failed, .refused:
            return ("its driver \(driverID) is \(driver.state)", "see the drivers check above for the cause; then `mediaroute enable \(driverID)`")
        case .stopped, .starting, .running, .restarting, .unknown: break
        }
        if let said = lines.last { return ("its driver \(driverID) refused it: \(said)", "its driver's sentence names what the device lacks or does wrong") }
        if let error = driver.lastDiscoveryError {
            return ("its driver \(driverID) is \(driver.state) and did not list it; its last discovery failure: \(error)", "mend what that sentence names")
        }
        return ("its driver \(driverID) is \(driver.state) and did not list it, and said nothing of it in its log",
                "look at mediarouted's log for \(driverID)'s lines, and try `mediaroute restart \(driverID)`")
    }

    private func sightings() -> [DeviceSighting] {
        var found: [DeviceSighting] = []
        if case .browsed(let services) = avahi {
            for (type, list) in services.sorted(by: { $0.key < $1.key }) {
                for service in list where DeviceSighting.same(DeviceSighting.name(of: service, type: type), device) {
                    found.append(DeviceSighting(driver: AvahiProbe.serviceTypes[type] ?? type,
                                                how: "DNS-SD \(type) \"\(service.name)\" at \(service.address):\(service.port)", address: service.address))
                }
            }
        }
        for renderer in renderers where renderer.name.map({ DeviceSighting.same($0, device) }) ?? false {
            found.append(DeviceSighting(driver: Self.dlna, how: "SSDP MediaRenderer \"\(renderer.name ?? "")\" at \(renderer.location.absoluteString)",
                                        address: renderer.sender))
        }
        return found
    }

    /// Everything heard on the network, for a person looking for a misspelt name.
    private func seenNames() -> [String] {
        var names: [String] = []
        if case .browsed(let services) = avahi {
            for (type, list) in services { names += list.map { "\"\(DeviceSighting.name(of: $0, type: type))\" (\(type))" } }
        }
        names += renderers.map { renderer in renderer.name.map { "\"\($0)\" (SSDP)" } ?? "a renderer at \(renderer.sender) (SSDP; \(renderer.problem ?? "unnamed"))" }
        return names.sorted()
    }

    /// The picker's entry for the device, waiting up to `wait` for discovery to find it.
    private func findInPicker() async -> PickerLine? {
        let (changes, continuation) = AsyncStream<Control.PickerChanged>.makeStream()
        guard let client = try? await DaemonClient.connect(socket: socket, onPickerChanged: { continuation.yield($0) }) else { return nil }
        defer { Task { await client.close() } }
        guard let opened = try? await client.call(Control.OpenPicker(), timeout: .seconds(10)) else { return nil }
        let match: @Sendable ([PickerLine]) -> PickerLine? = { [device] entries in
            entries.first { entry in DeviceSighting.same(entry.name, device) || entry.routes.contains { $0.device.id == device } }
        }
        let timer = Task { [wait] in
            try? await Task.sleep(for: wait)
            continuation.finish()
        }
        defer { timer.cancel() }
        var found = match(opened.entries)
        if found == nil {
            for await changed in changes where changed.picker == opened.picker {
                if let entry = match(changed.entries) {
                    found = entry
                    break
                }
            }
        }
        _ = try? await client.call(Control.ClosePicker(picker: opened.picker), timeout: .seconds(5))
        return found
    }
}
