import Foundation

/// `mediaroute-identity-check`: the tool behind the DriverIdentityPlugin build-tool plugin and the
/// `swift package check-driver-identity` command. Standard library and Foundation only.
///
///     mediaroute-identity-check --target NAME [--manifest FILE.json]... [--source FILE.swift]...
///                               [--dependency-source FILE.swift]... [--output FILE.swift]
///
/// Prints each finding as `FILE:LINE: error: SENTENCE` and exits 1 when there is an error. On
/// success `--output` gets a Swift file holding only a comment (a build command must produce a file
/// for SwiftPM to run it).
@main
struct IdentityCheckCommand {
    static func main() {
        var target: String?, output: String?
        var manifests: [String] = [], sources: [String] = [], dependencySources: [String] = []
        var arguments = CommandLine.arguments.dropFirst()
        while let flag = arguments.popFirst() {
            guard let value = arguments.popFirst() else { fail("\(flag) needs a value") }
            switch flag {
            case "--target": target = value
            case "--manifest": manifests.append(value)
            case "--source": sources.append(value)
            case "--dependency-source": dependencySources.append(value)
            case "--output": output = value
            default: fail("unknown option \(flag)")
            }
        }
        guard let target else { fail("--target NAME is required") }
        let outcome = DriverIdentityCheck(target: target, candidateManifests: manifests, sources: sources, dependencySources: dependencySources).run()
        for diagnostic in outcome.diagnostics { FileHandle.standardError.write(Data((diagnostic.description + "\n").utf8)) }
        if outcome.failed { exit(1) }
        if let output {
            let stamp = "// Written by mediaroute-identity-check on every change to the driver or its manifest.\n// \(outcome.summary)\n"
            // Rewritten only when it changes: a new file would recompile and relink the driver for nothing.
            guard FileManager.default.contents(atPath: output) != Data(stamp.utf8) else { return }
            do { try Data(stamp.utf8).write(to: URL(fileURLWithPath: output), options: .atomic) } catch { fail("cannot write \(output): \(error)") }
        } else {
            print(outcome.summary)
        }
    }

    static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("mediaroute-identity-check: \(message)\nusage: mediaroute-identity-check --target NAME [--manifest FILE.json]... [--source FILE.swift]... [--dependency-source FILE.swift]... [--output FILE.swift]\n".utf8))
        exit(2)
    }
}
