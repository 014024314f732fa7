import Foundation
import MediaRouteIPC
import Testing
import TestSupport

/// The units as `make install` writes them (its substitutions), pointed at the build the tests run
/// from (`systemd-analyze verify` wants ExecStart's program to exist), checked by systemd itself.
@Suite("The systemd units", .timeLimit(.minutes(1)))
struct SystemdUnitTests {
    @Test(arguments: ["system", "user"])
    func systemdAnalyzeVerifyPasses(_ kind: String) async throws {
        try await withUnit(kind) { unit, directory in
            // A user unit is verified by a user manager, which wants a runtime directory.
            let verify = try await ChildOutput.run("/usr/bin/env", ["XDG_RUNTIME_DIR=\(directory)", "HOME=\(directory)", "systemd-analyze"]
                                                       + (kind == "user" ? ["--user"] : []) + ["verify", "--man=no", unit], timeout: .seconds(30))
            #expect(verify.termination == .exited(0), "\(verify.standardError)")
            // An unknown or misspelt directive is only a warning to verify: none may be printed.
            #expect(verify.standardError.isEmpty && verify.standardOutput.isEmpty, "\(verify.standardOutput)\(verify.standardError)")
        }
    }

    /// `systemd-analyze security` rates the system unit's exposure 1.8 ("OK"); a directive dropped
    /// by mistake shows as a higher figure, and over 2.0 fails here.
    @Test func theSystemUnitStaysHardened() async throws {
        try await withUnit("system") { unit, _ in
            let security = try await ChildOutput.run("/usr/bin/systemd-analyze", ["security", "--offline=yes", "--threshold=20", unit], timeout: .seconds(30))
            let verdict = security.standardOutput.split(separator: "\n").last { $0.contains("Overall exposure level") } ?? "no verdict: \(security.standardError)"
            #expect(security.termination == .exited(0), "\(verdict)")
        }
    }

    /// `body` with the unit of `kind`, its placeholders replaced as `make install` does, in a
    /// directory removed afterwards.
    private func withUnit(_ kind: String, _ body: (String, String) async throws -> Void) async throws {
        let directory = NSTemporaryDirectory() + "mediaroute-unit-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let built = (DaemonHarness.binary("mediarouted") as NSString).deletingLastPathComponent
        let template = try String(contentsOfFile: packageRoot + "/Sources/mediarouted/systemd/\(kind)/mediarouted.service", encoding: .utf8)
        let unit = directory + "/mediarouted.service"
        try template.replacingOccurrences(of: "@BINDIR@", with: built).replacingOccurrences(of: "@DRIVERSDIR@", with: directory).replacingOccurrences(of: "@CONFIG@", with: directory + "/mediarouted.yaml")
            .write(toFile: unit, atomically: true, encoding: .utf8)
        try await body(unit, directory)
    }
}
