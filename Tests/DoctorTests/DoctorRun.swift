import Foundation
import MediaRouteIPC
import TestSupport

/// One `mediaroute doctor --json` run: its exit status, its report, and its findings.
struct DoctorRun: CustomStringConvertible {
    struct Finding {
        let check: String
        let subject: String
        let verdict: String
        let finding: String
        let fix: String?
        let details: [String]
    }

    let termination: ChildProcess.Termination
    let output: String
    let error: String
    let findings: [Finding]
    let verdict: String?

    init(_ output: ChildOutput) {
        termination = output.termination
        self.output = output.standardOutput
        error = output.standardError
        let report = (try? JSONReader.parse(Array(output.standardOutput.utf8)))?.objectValue
        verdict = report?["verdict"]?.stringValue
        findings = (report?["diagnoses"]?.arrayValue ?? []).compactMap { value in
            guard let object = value.objectValue else { return nil }
            return Finding(check: object["check"]?.stringValue ?? "", subject: object["subject"]?.stringValue ?? "",
                           verdict: object["verdict"]?.stringValue ?? "", finding: object["finding"]?.stringValue ?? "",
                           fix: object["fix"]?.stringValue, details: (object["details"]?.arrayValue ?? []).compactMap(\.stringValue))
        }
    }

    func of(_ check: String, _ subject: String? = nil) -> [Finding] {
        findings.filter { $0.check == check && (subject == nil || $0.subject == subject) }
    }

    var description: String { "doctor \(termination)\n\(output)\(error)" }
}

/// Runs the doctor in `namespace`, against the daemon at `socket`, with its Avahi client on `bus`
/// (never the machine's own system bus: a path nothing listens on when the test has no Avahi).
func doctor(_ arguments: [String], in namespace: DoctorNamespace, socket: String, bus: String) async throws -> DoctorRun {
    DoctorRun(try await namespace.run([DaemonHarness.binary("mediaroute"), "--socket", socket, "doctor", "--json"] + arguments,
                                      environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus]))
}

/// Runs `mediaroute ARGUMENTS` in `namespace` as nobody (uid 65534), in a mount namespace of its own
/// (unshare) where `/run` is a fresh tmpfs holding what a machine running the system daemon has: its
/// runtime directory /run/mediaroute (root's, 0700, as systemd makes it) with the daemon's socket
/// (`systemRun`, the directory of the test daemon's socket, bind-mounted there), and the user's own
/// /run/user/65534 (`XDG_RUNTIME_DIR`) without a mediaroute socket. Nothing of it outlives the run.
func doctorAsUser(_ arguments: [String], in namespace: DoctorNamespace, systemRun: String, bus: String) async throws -> DoctorRun {
    let script = """
        set -e
        mount -t tmpfs -o mode=0755 doctor-run /run
        mkdir -m 0700 /run/mediaroute
        mount --bind "$1" /run/mediaroute
        mkdir -p -m 0755 /run/user
        mkdir -m 0700 /run/user/65534
        chown 65534:65534 /run/user/65534
        shift
        exec /usr/bin/setpriv --reuid=65534 --regid=65534 --clear-groups "$@"
        """
    return DoctorRun(try await namespace.run(["/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", script, "sh", systemRun,
                                              DaemonHarness.binary("mediaroute")] + arguments + ["--json"],
                                             environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus, "XDG_RUNTIME_DIR": "/run/user/65534", "MEDIAROUTE_SOCKET": ""]))
}
