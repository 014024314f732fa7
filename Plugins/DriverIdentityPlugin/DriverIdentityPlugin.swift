import Foundation
import PackagePlugin

/// Applied to a driver's executable target, checks on every build that changes the driver or its
/// manifest that the three names of its protocol agree (mediaroute-identity-check), and fails the
/// build with a diagnostic naming the mismatch, the file and the line when they do not.
///
/// The manifest is the JSON file in the target's folder or the folder above (`Protocols/<Name>/`)
/// whose `executable` is the target's name; a target no manifest names (a receiver) is left alone.
@main
struct DriverIdentityPlugin: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) async throws -> [Command] {
        guard let target = target as? SwiftSourceModuleTarget, target.kind == .executable else { return [] }
        let folders = [target.directoryURL, target.directoryURL.deletingLastPathComponent()]
        let manifests = folders.flatMap { folder in
            ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter { $0.hasSuffix(".json") }.map { folder.appending(path: $0) }
        }
        guard !manifests.isEmpty else { return [] }
        let sources = target.sourceFiles(withSuffix: "swift").map(\.url)
        // Where a constant holding the identifier may be declared (Protocols/Reference/Common).
        let dependencySources = target.dependencies.flatMap { dependency -> [URL] in
            guard case .target(let module as SwiftSourceModuleTarget) = dependency else { return [] }
            return module.sourceFiles(withSuffix: "swift").map(\.url)
        }
        let stamp = context.pluginWorkDirectoryURL.appending(path: "DriverIdentityChecked.swift")
        var arguments: [String] = ["--target", target.name, "--output", stamp.path]
        for manifest in manifests { arguments += ["--manifest", manifest.path] }
        for source in sources { arguments += ["--source", source.path] }
        for source in dependencySources { arguments += ["--dependency-source", source.path] }
        let inputs: [URL] = manifests + sources + dependencySources
        return [.buildCommand(
            displayName: "Checking the identity of \(target.name) against its manifest",
            executable: try context.tool(named: "mediaroute-identity-check").url,
            arguments: arguments,
            inputFiles: inputs,
            outputFiles: [stamp]
        )]
    }
}
