import Foundation
import PackagePlugin

/// `swift package check-driver-identity [--target NAME]...`: the identity check of every driver of
/// the package (each executable target under Protocols/ that a manifest beside it names, or the
/// targets named), without building it, and every
/// manifest under `Protocols/` whose executable no target of the package builds (the lines
/// `swift package new-driver` printed were not added to Package.swift). Exits non-zero on any error.
@main
struct CheckDriverIdentity: CommandPlugin {
    func performCommand(context: PluginContext, arguments: [String]) async throws {
        var extractor = ArgumentExtractor(arguments)
        let only = extractor.extractOption(named: "target")
        let tool = try context.tool(named: "mediaroute-identity-check").url
        let executables = context.package.targets.compactMap { $0 as? SwiftSourceModuleTarget }.filter { $0.kind == .executable }
        var failed = false, checked = 0
        // The drivers are under Protocols/ (the layout new-driver writes); --target names any other.
        let protocols = context.package.directoryURL.appending(path: "Protocols").standardizedFileURL.path + "/"
        for target in executables where only.isEmpty ? target.directoryURL.standardizedFileURL.path.hasPrefix(protocols) : only.contains(target.name) {
            let folders = [target.directoryURL, target.directoryURL.deletingLastPathComponent()]
            let manifests = folders.flatMap { folder in
                ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter { $0.hasSuffix(".json") }.map { folder.appending(path: $0).path }
            }
            let dependencySources = target.dependencies.flatMap { dependency -> [String] in
                guard case .target(let module as SwiftSourceModuleTarget) = dependency else { return [] }
                return module.sourceFiles(withSuffix: "swift").map(\.url.path)
            }
            var arguments: [String] = ["--target", target.name]
            for manifest in manifests { arguments += ["--manifest", manifest] }
            for source in target.sourceFiles(withSuffix: "swift") { arguments += ["--source", source.url.path] }
            for source in dependencySources { arguments += ["--dependency-source", source] }
            let (status, output) = try run(tool, arguments)
            if output.contains("is not a driver (") { continue }
            print(output, terminator: output.hasSuffix("\n") ? "" : "\n")
            if status != 0 { failed = true }
            checked += 1
        }
        failed = reportManifestsWithoutTarget(context: context, executables: Set(executables.map(\.name))) || failed
        if failed {
            Diagnostics.error("the identity check found errors (above)")
            throw CheckFailed()
        }
        print("check-driver-identity: \(checked) driver target(s) checked, no mismatch")
    }

    struct CheckFailed: Error, CustomStringConvertible {
        var description: String { "the identity check found errors" }
    }

    /// Manifests under Protocols/*/ naming an executable the package does not build; true if any.
    private func reportManifestsWithoutTarget(context: PluginContext, executables: Set<String>) -> Bool {
        let protocols = context.package.directoryURL.appending(path: "Protocols")
        var missing = false
        for folder in (try? FileManager.default.contentsOfDirectory(atPath: protocols.path)) ?? [] {
            let directory = protocols.appending(path: folder)
            for name in ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).sorted() where name.hasSuffix(".json") {
                let file = directory.appending(path: name)
                guard let data = FileManager.default.contents(atPath: file.path),
                      let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any], object["exportedType"] != nil,
                      let executable = (object["executable"] as? String).map({ ($0 as NSString).lastPathComponent }),
                      !executables.contains(executable) else { continue }
                print("\(file.path): error: the manifest names the executable \"\(executable)\" but no executable target of this package has that name: add the lines `swift package new-driver` printed to Package.swift (or correct \"executable\")")
                missing = true
            }
        }
        return missing
    }

    private func run(_ tool: URL, _ arguments: [String]) throws -> (Int32, String) {
        let process = Process()
        process.executableURL = tool
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output, as: UTF8.self))
    }
}
