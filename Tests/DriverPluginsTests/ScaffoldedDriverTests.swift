import Foundation
import MediaRouteIPC
import PrivateDaemons
import TestSupport
import Testing

/// `swift package new-driver` and the identity plugins on a scratch package that depends on this
/// checkout by path: the scaffold as a driver author gets it, built, run under the real supervisor,
/// its generated test run, then made to lie about its identity.
@Suite(.serialized) struct ScaffoldedDriverTests {
    static let protocolID = "org.example.desklamp"
    static let executable = "mediaroute-desk-lamp-driver"

    @Test(.timeLimit(.minutes(10)))
    func scaffoldBuildsRunsUnderTheSupervisorAndItsIdentityIsChecked() async throws {
        let package = try ScratchPackage(name: "DeskLampDriver")
        defer { package.remove() }
        var timings: [String] = []

        // 1. Scaffold: the files, and the Package.swift lines printed rather than written.
        let scaffold = try await package.swift("package", ["--allow-writing-to-package-directory", "new-driver", "--protocol", Self.protocolID, "--name", "Desk Lamp"])
        timings.append("new-driver \(Self.format(scaffold.seconds))")
        try #require(scaffold.succeeded, "new-driver failed: \(scaffold.output)")
        for file in ["Protocols/DeskLamp/Driver/DeskLampDriver.swift", "Protocols/DeskLamp/\(Self.protocolID).json",
                     "Tests/DeskLampDriverTests/DeskLampDriverTests.swift", "Tests/DeskLampDriverTests/LocalSupervisor.swift"] {
            #expect(scaffold.output.contains("created \(file)"), "new-driver did not say it created \(file): \(scaffold.output)")
            #expect(FileManager.default.fileExists(atPath: package.root + "/" + file))
        }
        let lines = try #require(PrintedLines(scaffold.output), "new-driver printed no Package.swift lines: \(scaffold.output)")
        try package.write("Package.swift", ScratchPackage.manifest(name: "DeskLampDriver", products: lines.products, targets: lines.targets))

        // A second run refuses to overwrite what the first wrote.
        let again = try await package.swift("package", ["--allow-writing-to-package-directory", "new-driver", "--protocol", Self.protocolID, "--name", "Desk Lamp"])
        #expect(!again.succeeded && again.output.contains("already exists"), "new-driver overwrote or did not say why: \(again.output)")

        // 2. Build it as generated (the identity plugin runs on the driver target), with its test.
        let build = try await package.swift("build", ["--build-tests"])
        timings.append("build \(Self.format(build.seconds))")
        try #require(build.succeeded, "the scaffold does not build as generated: \(build.output.suffix(4000))")
        // Warnings in the scaffold's own files (MediaRoute's pkg-config targets warn about flags of their own).
        let warnings = build.output.components(separatedBy: "\n").filter { $0.contains("warning:") && $0.contains(package.root) }
        #expect(warnings.isEmpty, "the scaffold builds with warnings: \(warnings)")
        let driver = package.scratchPath + "/debug/" + Self.executable

        // 3. Under the real supervisor: the picker starts it, it reports no device, it stays running.
        try await DaemonHarness.run { harness in
            let manifest = try package.read("Protocols/DeskLamp/\(Self.protocolID).json").replacingOccurrences(of: "\"\(Self.executable)\"", with: "\"\(driver)\"")
            try manifest.write(toFile: harness.drivers.drivers + "/\(Self.protocolID).json", atomically: true, encoding: .utf8)
            try await harness.start()
            let devices = await harness.cli(["--json", "devices", "--wait", "1"])
            #expect(devices.status == .exited(0), "mediaroute devices: \(devices.error)\n\(harness.log)")
            let drivers = await harness.cli(["--json", "drivers"])
            let report = drivers.json?.objectValue?["drivers"]?.arrayValue?.first { $0.objectValue?["protocol"]?.stringValue == Self.protocolID }?.objectValue
            #expect(report?["state"]?.stringValue == "running", "the supervisor does not run the scaffolded driver: \(drivers.output)\n\(harness.log)")
            #expect(report?["displayName"]?.stringValue == "Desk Lamp")
        }

        // 4. Its generated test passes, against this checkout's mediarouted and mediaroute.
        let test = try await package.swift("test", ["--skip-build"], environment: ["MEDIAROUTE_BIN_DIR": Executables.directory])
        timings.append("generated test \(Self.format(test.seconds))")
        #expect(test.succeeded && test.output.contains("runsUnderTheSupervisorAndFindsNoDeviceYet()"), "the generated test failed: \(test.output.suffix(4000))")

        // 5. The code lies about its protocol: the build fails, naming the mismatch, the file and the line.
        let source = "Protocols/DeskLamp/Driver/DeskLampDriver.swift"
        let original = try package.read(source)
        try package.write(source, original.replacingOccurrences(of: "UTType(exportedAs: \"\(Self.protocolID)\")", with: "UTType(exportedAs: \"org.example.lump\")"))
        let lying = try await package.swift("build", ["--product", Self.executable])
        timings.append("rebuild with a mismatch \(Self.format(lying.seconds))")
        #expect(!lying.succeeded, "a driver whose protocolType disagrees with its manifest built")
        let line = try #require(original.components(separatedBy: "\n").firstIndex { $0.contains("var protocolType") }) + 1
        #expect(lying.output.contains("\(source):\(line): error: identity mismatch: protocolType returns \"org.example.lump\""),
                "the build did not name the mismatch, file and line: \(lying.output.suffix(3000))")
        #expect(lying.output.contains("says \"protocol\": \"\(Self.protocolID)\""))

        // 6. The same on demand, and a manifest whose exportedType disagrees, with its line.
        let manifestPath = "Protocols/DeskLamp/\(Self.protocolID).json"
        let manifest = try package.read(manifestPath)
        try package.write(manifestPath, manifest.replacingOccurrences(of: "\"identifier\": \"\(Self.protocolID)\"", with: "\"identifier\": \"org.example.lamp\""))
        let check = try await package.swift("package", ["check-driver-identity"])
        timings.append("check-driver-identity \(Self.format(check.seconds))")
        #expect(!check.succeeded, "check-driver-identity passed a driver whose three names disagree")
        #expect(check.output.contains("\(source):\(line): error: identity mismatch"), "\(check.output)")
        let identifierLine = try #require(manifest.components(separatedBy: "\n").firstIndex { $0.contains("\"identifier\"") }) + 1
        #expect(check.output.contains("\(manifestPath):\(identifierLine): error: identity mismatch: \"exportedType.identifier\" is \"org.example.lamp\" but \"protocol\" is \"\(Self.protocolID)\""),
                "\(check.output)")
        print("ScaffoldedDriverTests timings: " + timings.joined(separator: ", "))
    }

    static func format(_ seconds: Double) -> String { String(format: "%.1f s", seconds) }
}

/// The Package.swift lines new-driver prints: after "in products:" and after "in targets:".
struct PrintedLines {
    let products: [String]
    let targets: [String]

    init?(_ output: String) {
        let lines = output.components(separatedBy: "\n")
        func block(after heading: String) -> [String] {
            guard let start = lines.firstIndex(where: { $0.trimmingCharacters(in: .whitespaces) == heading }) else { return [] }
            return Array(lines[(start + 1)...].prefix { !$0.trimmingCharacters(in: .whitespaces).isEmpty }).map { $0.trimmingCharacters(in: .whitespaces) }
        }
        products = block(after: "in products:")
        targets = block(after: "in targets:")
        if products.isEmpty || targets.isEmpty { return nil }
    }
}
