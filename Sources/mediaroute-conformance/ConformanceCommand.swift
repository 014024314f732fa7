import ArgumentParser
import Foundation
import MediaRouteSupervisor

/// `mediaroute-conformance MANIFEST`: plays the supervisor toward the driver a manifest names, in
/// any language, walks IPC/README.md section by section, and reports pass, fail or skip for every
/// clause it checks. Exits 1 if any check failed, 2 if the manifest is refused.
@main
struct ConformanceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mediaroute-conformance",
        abstract: "Check a MediaRoute driver against the wire protocol (IPC/README.md), in any language.",
        discussion: """
            The kit starts the driver from its manifest as mediarouted does (descriptor 3, its own process group, \
            MEDIAROUTE_STATE_DIRECTORY in a fresh directory removed afterwards) and speaks to it as the supervisor. \
            Checks that need a device use the devices discovery finds within --discovery-seconds; give test devices \
            through the manifest's arguments. Faults are injected on fresh driver processes. Exit status: 0 all passed \
            or skipped, 1 a check failed, 2 the manifest was refused.
            """)

    @Argument(help: "The driver's manifest (*.json), judged as mediarouted judges it.") var manifest: String
    @Flag(help: "Print the report as one JSON object (for CI).") var json = false
    @Option(help: "Seconds discovery may take to find a first device.") var discoverySeconds = 5.0
    @Option(help: "Seconds an activation, pairing or session outcome may take.") var outcomeSeconds = 10.0
    @Option(help: "The code that pairs a device asking for one (without it, the right-code check is skipped).") var pairingCode: String?
    @Option(help: "The URL session.start plays.") var url = "http://127.0.0.1:9/conformance.wav"
    @Option(help: "The device application session.start launches and data goes to (default: a session in player mode; data to org.mediaroute.conformance).")
    var application: String?
    @Flag(help: "Pass the driver's standard output and error through to standard error.") var showDriverOutput = false

    func run() async throws {
        let parsed: DriverManifest
        do {
            parsed = try DriverManifest(path: manifest)
        } catch {
            let report = ConformanceReport(manifestPath: manifest)
            report.record(CheckResult(section: "Manifest", clause: "the manifest is accepted as mediarouted accepts it (README, Driver manifests)",
                                      outcome: .fail, detail: error.description, seconds: 0))
            print(json ? report.json(protocolID: nil) : report.text(protocolID: nil), terminator: "")
            throw ExitCode(2)
        }
        let stateDirectory = try Self.makeStateDirectory()
        defer { try? FileManager.default.removeItem(atPath: stateDirectory) }
        let setup = KitSetup(manifest: parsed, stateDirectory: stateDirectory, showDriverOutput: showDriverOutput,
                             discoveryBound: .milliseconds(Int64(discoverySeconds * 1000)), outcomeBound: .milliseconds(Int64(outcomeSeconds * 1000)),
                             pairingCode: pairingCode, url: url, application: application)
        let report = ConformanceReport(manifestPath: parsed.path)
        report.record(CheckResult(section: "Manifest", clause: "the manifest is accepted as mediarouted accepts it (README, Driver manifests)",
                                  outcome: .pass, detail: "\(parsed.protocolID), \(parsed.executable)", seconds: 0))
        await ConformanceRun(setup: setup, report: report).run()
        print(json ? report.json(protocolID: parsed.protocolID) : report.text(protocolID: parsed.protocolID), terminator: "")
        if report.failed { throw ExitCode(1) }
    }

    /// A fresh `MEDIAROUTE_STATE_DIRECTORY` (mode 0700, as §11.2 gives it).
    private static func makeStateDirectory() throws -> String {
        var template = Array((NSTemporaryDirectory() + "/mediaroute-conformance.XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else { throw KitError("cannot make a state directory in \(NSTemporaryDirectory()): \(String(cString: strerror(errno)))") }
        return String(cString: made)
    }
}
