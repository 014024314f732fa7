import Foundation
import MediaRouteIPC

/// A package made in a temporary folder for a test, depending on this MediaRoute checkout by local
/// path (found from this file's place, not a fixed path), on which `swift package` plugins and
/// `swift build` run for real. Its build products go to `scratchPath`, which outlives it: see
/// `sharedScratchPath`. `remove()` deletes the package folder.
struct ScratchPackage {
    /// MediaRoute's root folder: this file is Tests/DriverPluginsTests/ScratchPackage.swift.
    static let mediaRouteRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

    /// Where scratch packages build: inside MediaRoute's own .build, so that a second run compiles
    /// only what changed (MediaDevice and its dependencies, the plugins, and the identity tool are
    /// compiled once). On a fresh clone the first run pays for them.
    static let sharedScratchPath = mediaRouteRoot + "/.build/plugin-scratch"

    let root: String
    let scratchPath: String

    /// Writes Package.swift (a package named `name` with no targets yet, depending on MediaRoute)
    /// and pins MediaRoute's own dependency versions with its Package.resolved.
    init(name: String, scratchPath: String = ScratchPackage.sharedScratchPath) throws {
        root = NSTemporaryDirectory() + "mediaroute-scratch-\(UUID().uuidString.prefix(8))/" + name
        self.scratchPath = scratchPath
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: temporaries, withIntermediateDirectories: true)
        try write("Package.swift", Self.manifest(name: name, products: [], targets: []))
        try FileManager.default.copyItem(atPath: Self.mediaRouteRoot + "/Package.resolved", toPath: root + "/Package.resolved")
    }

    static func manifest(name: String, products: [String], targets: [String]) -> String {
        """
        // swift-tools-version: 6.2
        import PackageDescription

        let package = Package(
            name: "\(name)",
            products: [
                \(products.joined(separator: "\n        "))
            ],
            dependencies: [.package(path: "\(mediaRouteRoot)")],
            targets: [
                \(targets.joined(separator: "\n        "))
            ],
            swiftLanguageModes: [.v6]
        )

        """
    }

    /// SwiftPM's own temporary folders (each run leaves several behind): removed with the package.
    private var temporaries: String { (root as NSString).deletingLastPathComponent + "/tmp" }

    func write(_ path: String, _ text: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: root + "/" + path))
    }

    func read(_ path: String) throws -> String {
        try String(contentsOfFile: root + "/" + path, encoding: .utf8)
    }

    struct Run: Sendable {
        let status: ChildProcess.Termination
        let output: String
        let seconds: Double
        var succeeded: Bool { status == .exited(0) }
    }

    /// Runs `swift SUBCOMMAND --package-path ROOT --scratch-path SCRATCH ARGUMENTS`, output and errors together.
    func swift(_ subcommand: String, _ arguments: [String], environment: [String: String] = [:]) async throws -> Run {
        let log = root + "/../swift-\(subcommand)-\(UUID().uuidString.prefix(6)).log"
        let descriptor = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        defer { close(descriptor) }
        let null = open("/dev/null", O_RDONLY | O_CLOEXEC)
        defer { close(null) }
        let variables = ProcessInfo.processInfo.environment.merging(["TMPDIR": temporaries]) { $1 }.merging(environment) { $1 }
            .map { "\($0.key)=\($0.value)" }
        let started = ContinuousClock.now
        let process = try ChildProcess(executable: try Self.swiftExecutable(), arguments: [subcommand, "--package-path", root, "--scratch-path", scratchPath] + arguments,
                                       environment: variables, standardInput: null, standardOutput: descriptor, standardError: descriptor)
        let status = await process.exitStatus()
        let elapsed = ContinuousClock.now - started
        let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        return Run(status: status, output: output, seconds: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }

    struct NoSwift: Error, CustomStringConvertible {
        var description: String { "no `swift` on $PATH: the plugin tests run SwiftPM itself" }
    }

    static func swiftExecutable() throws -> String {
        for folder in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") where FileManager.default.isExecutableFile(atPath: "\(folder)/swift") {
            return "\(folder)/swift"
        }
        throw NoSwift()
    }

    /// Deletes the package's temporary folder (its build products stay in `scratchPath`).
    func remove() {
        try? FileManager.default.removeItem(atPath: (root as NSString).deletingLastPathComponent)
    }
}
