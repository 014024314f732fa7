import ArgumentParser
import Foundation
import MediaRouteIPC
import MediaRouteWire

/// `mediaroute doctor [DEVICE]`: why a device is not listed, or not playing.
struct Doctor: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Say why a device is not listed or not playing: the daemon, its drivers, Avahi, multicast, the firewall, and DEVICE.",
        discussion: "Exits 0 when no check found a problem (warnings do not count), 1 when one did. Network checks look at the namespace the command runs in.")
    @OptionGroup var options: GlobalOptions
    @Argument(help: "A device's name or id: is it in the picker, heard on the network, refused by its driver, and what was last said of it.")
    var device: String?
    // `.unconditional`: "--wait -1" is a value to refuse with a reason, not a missing one.
    @Option(parsing: .unconditional, help: "Seconds to look for DEVICE in the picker and on the network.") var wait: Double = 3

    func validate() throws {
        guard wait >= 0.5, wait <= 60 else { throw ValidationError("--wait must be from 0.5 to 60 seconds, not \(wait)") }
        if let device, device.trimmingCharacters(in: .whitespaces).isEmpty { throw ValidationError("DEVICE must be a name or id, not empty") }
    }

    func run() async throws {
        let wait = Duration.milliseconds(Int(self.wait * 1000))
        let (daemonDiagnosis, daemon) = await DaemonCheck(socket: options.socket).run()
        // Avahi and SSDP listen for as long as the device is looked for; the host checks meanwhile.
        async let avahi = AvahiProbe.browse(linger: device == nil ? .milliseconds(100) : wait, bound: wait + .seconds(2))
        async let renderers: [SSDPProbe.Renderer] = device == nil ? [] : SSDPProbe.search(listening: wait)
        async let multicast = MulticastCheck().run()
        async let firewall = FirewallCheck().run()
        var diagnoses = [daemonDiagnosis]
        if let daemon { diagnoses += DriversCheck(drivers: daemon.status.drivers).run() }
        let browsed = await avahi
        diagnoses.append(AvahiCheck(outcome: browsed).run())
        diagnoses += await multicast
        diagnoses += await firewall
        if let device {
            diagnoses += await DeviceCheck(device: device, socket: options.socket, daemon: daemon, avahi: browsed, renderers: await renderers, wait: wait).run()
        }
        if let daemon { await daemon.client.close() }
        let report = DoctorReport(device: device, diagnoses: diagnoses)
        options.output(report) { report.text }
        if report.verdict == .problem { throw ExitCode(1) }
    }
}
