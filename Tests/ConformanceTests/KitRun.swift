import Foundation
import MediaRouteIPC
import PrivateDaemons
import Testing

/// One run of `mediaroute-conformance` on a manifest, as CI runs it (`--json`), started and stopped
/// by PID, with a bound; its report read back from the JSON.
struct KitRun {
    let status: ChildProcess.Termination
    let report: JSONObject
    let errorOutput: String

    /// Checks with `outcome`, as "section: clause: detail" lines.
    func checks(_ outcome: String) -> [String] {
        (report["sections"]?.arrayValue ?? []).flatMap { section -> [String] in
            let name = section.objectValue?["section"]?.stringValue ?? "?"
            return (section.objectValue?["checks"]?.arrayValue ?? []).compactMap { check in
                let check = check.objectValue ?? [:]
                guard check["outcome"]?.stringValue == outcome else { return nil }
                return "\(name): \(check["clause"]?.stringValue ?? "?"): \(check["detail"]?.stringValue ?? "")"
            }
        }
    }

    func count(_ member: String) -> Int64 { report[member]?.integerValue ?? -1 }
    var seconds: Double { report["seconds"]?.doubleValue ?? report["seconds"]?.integerValue.map(Double.init) ?? -1 }

    /// The sections that passed at least one check.
    var passedSections: Set<String> {
        Set((report["sections"]?.arrayValue ?? []).compactMap { section in
            let object = section.objectValue ?? [:]
            let passed = (object["checks"]?.arrayValue ?? []).contains { $0.objectValue?["outcome"]?.stringValue == "pass" }
            return passed ? object["section"]?.stringValue : nil
        })
    }

    /// Runs the kit on `manifest` with `arguments`; kills it (by PID) if it runs past `bound`.
    static func run(_ manifest: String, _ arguments: [String] = [], environment: [String: String] = [:], bound: Duration = .seconds(120)) async throws -> KitRun {
        let scratch = NSTemporaryDirectory() + "/conformance-test-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let stdout = open(scratch + "/report.json", O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        let stderr = open(scratch + "/stderr", O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        var variables = ProcessInfo.processInfo.environment
        variables.merge(environment) { _, new in new }
        let kit: ChildProcess
        do {
            kit = try ChildProcess(executable: Executables.sibling("mediaroute-conformance"), arguments: [manifest, "--json"] + arguments,
                                   environment: variables.map { "\($0.key)=\($0.value)" }, standardOutput: stdout, standardError: stderr)
        } catch {
            close(stdout)
            close(stderr)
            throw error
        }
        close(stdout)
        close(stderr)
        let killer = Task {
            try await Task.sleep(for: bound)
            if kit.exitIfEnded() == nil { kit.signal(SIGKILL) }
        }
        let status = await kit.exitStatus()
        killer.cancel()
        let output = (try? Data(contentsOf: URL(fileURLWithPath: scratch + "/report.json"))) ?? Data()
        let errors = (try? String(contentsOfFile: scratch + "/stderr", encoding: .utf8)) ?? ""
        guard let report = (try? JSONReader.parse(Array(output)))?.objectValue else {
            throw KitRunError(description: "the kit (\(status)) printed no JSON report; its standard error:\n\(errors)")
        }
        return KitRun(status: status, report: report, errorOutput: errors)
    }

    /// A copy of `manifest` in `directory` with its executable made absolute (the one built beside
    /// the tests) and `environment` added: what an installation beside the binaries would hold.
    static func installedCopy(of manifest: String, in directory: String, environment: [String: String] = [:]) throws -> String {
        let data = try Data(contentsOf: URL(fileURLWithPath: manifest))
        guard var object = try JSONReader.parse(Array(data)).objectValue, let executable = object["executable"]?.stringValue else {
            throw KitRunError(description: "\(manifest) has no executable")
        }
        object["executable"] = .string(Executables.sibling(executable))
        var variables = object["environment"]?.objectValue ?? [:]
        variables["SWIFT_BACKTRACE"] = "enable=no"
        for (key, value) in environment { variables[key] = .string(value) }
        object["environment"] = .object(variables)
        let path = directory + "/" + (manifest as NSString).lastPathComponent
        try Data(JSONWriter.encode(.object(object))).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// The repository's root, from this file's place in it.
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
}

struct KitRunError: Error, CustomStringConvertible {
    let description: String
}
