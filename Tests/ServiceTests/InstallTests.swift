import Foundation
import Glibc
import MediaRouteIPC
import PrivateDaemons
import Testing
import TestSupport

/// `make install` into a staging tree, the installed daemon and CLI run from there, and
/// `make uninstall` leaving the tree empty. It installs the debug build the tests run from
/// (`BUILT=`, which the release layout shares): a release build here would cost many minutes.
@Suite("make install and uninstall", .timeLimit(.minutes(2)))
struct InstallTests {
    static let drivers = ["reference", "bluetooth", "dlna", "airplay"]

    @Test func installRunsFromTheInstalledTreeAndUninstallLeavesItEmpty() async throws {
        let root = NSTemporaryDirectory() + "mediaroute-install-\(UUID().uuidString.prefix(8))"
        let destination = root + "/stage"
        try FileManager.default.createDirectory(atPath: destination, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }

        let install = try await make("install", destination: destination)
        #expect(install.termination == .exited(0), "\(install.standardOutput)\(install.standardError)")

        let expected = ["usr/bin/mediarouted", "usr/bin/mediaroute", "usr/lib/systemd/system/mediarouted.service", "usr/lib/systemd/user/mediarouted.service",
                        "etc/mediaroute/mediarouted.yaml"]
            + Self.drivers.flatMap { ["usr/lib/mediaroute/drivers/mediaroute-\($0)-driver", "usr/lib/mediaroute/drivers/org.mediaroute.\($0).json"] }
        let files = try installedFiles(destination)
        #expect(files == Set(expected), "installed: \(files.sorted())")
        for program in expected where !program.hasSuffix(".json") && !program.hasSuffix(".service") && !program.hasSuffix(".yaml") {
            #expect(access(destination + "/" + program, X_OK) == 0, "\(program) is not executable")
        }
        for kind in ["system", "user"] {
            let unit = try String(contentsOfFile: destination + "/usr/lib/systemd/\(kind)/mediarouted.service", encoding: .utf8)
            let config = kind == "system" ? "--config /etc/mediaroute/mediarouted.yaml " : ""
            #expect(unit.contains("\nExecStart=/usr/bin/mediarouted \(config)--log-journal\n"), "\(kind) unit")
            #expect(unit.range(of: "@[A-Z]+@", options: .regularExpression) == nil, "a placeholder is left in the \(kind) unit")
        }

        // The installed daemon over the installed drivers, found beside it (BINDIR/../lib/mediaroute/drivers)
        // with no --drivers-dir: every manifest taken, each naming its installed driver (a manifest
        // whose executable is missing would be refused).
        let driversDirectory = destination + "/usr/lib/mediaroute/drivers"
        let socket = root + "/run/mediarouted.sock"
        let log = open(root + "/daemon.log", O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        let daemon = try ChildProcess(executable: destination + "/usr/bin/mediarouted",
                                      arguments: ["--config", destination + "/etc/mediaroute/mediarouted.yaml", "--socket", socket, "--state-dir", root + "/state",
                                                  "--no-mpris", "--no-push"],
                                      standardOutput: log, standardError: log)
        close(log)
        try await withTearDown {
            try await waitUntil("the installed daemon's socket", seconds: 20) { (try? UnixSocket.connect(path: socket)).map { close($0); return true } ?? false }
            let status = try await ChildOutput.run(destination + "/usr/bin/mediaroute", ["--socket", socket, "status", "--json"], timeout: .seconds(30))
            #expect(status.termination == .exited(0), "\(status.standardError)")
            let drivers = try JSONReader.parse(Array(status.standardOutput.utf8)).objectValue?["drivers"]?.arrayValue?.compactMap(\.objectValue) ?? []
            #expect(Set(drivers.compactMap { $0["protocol"]?.stringValue }) == Set(Self.drivers.map { "org.mediaroute.\($0)" }), "\(status.standardOutput)")
            for driver in drivers {
                #expect(driver["manifest"]?.stringValue?.hasPrefix(driversDirectory + "/") == true, "\(driver)")
                #expect(driver["state"]?.stringValue == "stopped", "\(driver)")  // ready to start on demand, not refused
            }
        } tearDown: {
            daemon.signal(SIGTERM)
            _ = await daemon.exitStatus()
        }

        let uninstall = try await make("uninstall", destination: destination)
        #expect(uninstall.termination == .exited(0), "\(uninstall.standardOutput)\(uninstall.standardError)")
        let left = try FileManager.default.contentsOfDirectory(atPath: destination)
        #expect(left.isEmpty, "left in the staging tree: \(left), files \((try? installedFiles(destination).sorted()) ?? [])")
    }

    /// `make TARGET DESTDIR=destination PREFIX=/usr`, from the package's root, with the build the tests run from.
    private func make(_ target: String, destination: String) async throws -> ChildOutput {
        let built = (DaemonHarness.binary("mediarouted") as NSString).deletingLastPathComponent
        return try await ChildOutput.run("/usr/bin/make", ["-C", packageRoot, target, "DESTDIR=\(destination)", "PREFIX=/usr", "CONFIGURATION=debug", "BUILT=\(built)"],
                                         timeout: .seconds(60))
    }

    private func installedFiles(_ directory: String) throws -> Set<String> {
        var files: Set<String> = []
        let enumerator = FileManager.default.enumerator(atPath: directory)
        while let path = enumerator?.nextObject() as? String {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: directory + "/" + path, isDirectory: &isDirectory), !isDirectory.boolValue { files.insert(path) }
        }
        return files
    }
}

/// The package's root: this file is Tests/ServiceTests/InstallTests.swift.
let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
