import Foundation
import PackagePlugin

/// `swift package --allow-writing-to-package-directory new-driver --protocol org.example.lamp --name "Lamp"`
///
/// Writes a new driver that builds and runs under the supervisor as generated:
///   Protocols/Lamp/Driver/LampDriver.swift    the @main MediaDeviceExtension, every method in place
///   Protocols/Lamp/org.example.lamp.json      its manifest, the three identity places agreeing
///   Tests/LampDriverTests/                    a Swift Testing test running it under mediarouted
/// and prints the lines to add to Package.swift. It never overwrites a file.
/// Options: `--executable NAME` (default `mediaroute-<name>-driver`).
@main
struct NewDriver: CommandPlugin {
    struct Refusal: Error, CustomStringConvertible {
        let description: String
    }

    func performCommand(context: PluginContext, arguments: [String]) async throws {
        var extractor = ArgumentExtractor(arguments)
        guard let protocolID = extractor.extractOption(named: "protocol").last, let name = extractor.extractOption(named: "name").last else {
            throw Refusal(description: "usage: swift package --allow-writing-to-package-directory new-driver --protocol org.example.lamp --name \"Lamp\" [--executable NAME]")
        }
        let executable = extractor.extractOption(named: "executable").last
        guard extractor.remainingArguments.isEmpty else {
            throw Refusal(description: "new-driver takes --protocol, --name and --executable; \(extractor.remainingArguments.joined(separator: " ")) is not one of them")
        }
        let names: DriverNames
        do { names = try DriverNames(protocolID: protocolID, displayName: name, executable: executable) } catch { throw Refusal(description: error.description) }

        let root = context.package.directoryURL
        _ = try Self.mediaRouteIdentity(context.package)
        let files: [(path: String, text: String)] = [
            ("Protocols/\(names.folder)/Driver/\(names.typeName).swift", DriverSourceTemplate.text(names)),
            ("Protocols/\(names.folder)/\(names.manifestFile)", ManifestTemplate.text(names)),
            ("Tests/\(names.testTarget)/\(names.testTarget).swift", DriverTestTemplate.text(names)),
            ("Tests/\(names.testTarget)/LocalSupervisor.swift", DriverTestTemplate.supervisorText(names)),
        ]
        if let existing = files.first(where: { FileManager.default.fileExists(atPath: root.appending(path: $0.path).path) }) {
            throw Refusal(description: "\(existing.path) already exists; new-driver never overwrites a file: choose another --name, or remove Protocols/\(names.folder) and Tests/\(names.testTarget) first")
        }
        if context.package.targets.contains(where: { $0.name == names.executable || $0.name == names.testTarget }) {
            throw Refusal(description: "this package already has a target named \(names.executable) or \(names.testTarget): choose another --name or --executable")
        }
        for file in files {
            let url = root.appending(path: file.path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(file.text.utf8).write(to: url)
            print("created \(file.path)")
        }
        let lines = PackageLines(names: names, mediaRoutePackage: try Self.mediaRouteIdentity(context.package))
        print("")
        print(lines.text)
        print("""
        Then: swift build --product \(names.executable)      (checks the identity places on every build)
              swift test --filter \(names.testTarget)         (runs it under mediarouted)
              swift package check-driver-identity             (says when a line above is missing)
        """)
    }

    /// nil when `package` is MediaRoute itself; else the identity of its dependency that has the
    /// MediaDevice product.
    static func mediaRouteIdentity(_ package: Package) throws -> String? {
        if package.targets.contains(where: { $0.name == "MediaDevice" }) { return nil }
        guard let dependency = package.dependencies.first(where: { $0.package.products.contains { $0.name == "MediaDevice" } }) else {
            throw Refusal(description: "\(package.displayName) does not depend on MediaRoute, whose MediaDevice product a driver is built on: add .package(path: \"PATH-TO-MEDIAROUTE\") (or its URL) to its dependencies first")
        }
        return dependency.package.id
    }
}
