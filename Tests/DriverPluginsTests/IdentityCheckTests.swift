import Foundation
import MediaRouteIPC
import PrivateDaemons
import Testing

/// `mediaroute-identity-check`, the tool behind the identity plugins, on drivers written for each
/// case in a temporary folder, and on the drivers in Protocols/.
@Suite struct IdentityCheckTests {
    static let tool = Executables.sibling("mediaroute-identity-check")

    /// A driver folder: `manifest` as Protocols/X/org.example.x.json, `source` as Protocols/X/Driver/XDriver.swift.
    final class Fixture {
        let root = NSTemporaryDirectory() + "identity-check-\(UUID().uuidString.prefix(8))"
        var manifest: String { root + "/org.example.x.json" }
        var source: String { root + "/Driver/XDriver.swift" }
        var constants: String { root + "/Common/Constants.swift" }

        init(manifest: String = Fixture.manifest(), source: String = Fixture.source(), constants: String? = nil) throws {
            try FileManager.default.createDirectory(atPath: root + "/Driver", withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: root + "/Common", withIntermediateDirectories: true)
            try manifest.write(toFile: self.manifest, atomically: true, encoding: .utf8)
            try source.write(toFile: self.source, atomically: true, encoding: .utf8)
            try (constants ?? "").write(toFile: self.constants, atomically: true, encoding: .utf8)
        }

        static func manifest(protocol id: String = "org.example.x", identifier: String = "org.example.x",
                             conformsTo: String = #"["public.media-sharing-protocol"]"#, executable: String = "x-driver") -> String {
            """
            {
              "protocol": "\(id)",
              "exportedType": {
                "identifier": "\(identifier)",
                "conformsTo": \(conformsTo),
                "description": "X"
              },
              "executable": "\(executable)"
            }
            """
        }

        static func source(_ protocolType: String = #"UTType(exportedAs: "org.example.x")"#) -> String {
            """
            import MediaDevice

            @main
            final class XDriver: MediaDeviceExtension {
                var protocolType: UTType { \(protocolType) }
                var supportsSimultaneousSessions: Bool { false }
            }
            """
        }

        func check(target: String = "x-driver") async throws -> (status: ChildProcess.Termination, output: String) {
            let log = root + "/check.log"
            let descriptor = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            let process = try ChildProcess(executable: IdentityCheckTests.tool,
                                           arguments: ["--target", target, "--manifest", manifest, "--source", source, "--dependency-source", constants],
                                           standardOutput: descriptor, standardError: descriptor)
            close(descriptor)
            let status = await process.exitStatus()
            return (status, (try? String(contentsOfFile: log, encoding: .utf8)) ?? "")
        }

        deinit { try? FileManager.default.removeItem(atPath: root) }
    }

    @Test func agreeingDriverPasses() async throws {
        let (status, output) = try await Fixture().check()
        #expect(status == .exited(0), "\(output)")
        #expect(output.contains("x-driver: org.example.x agrees"))
    }

    @Test func protocolTypeThatDisagreesIsNamedWithItsFileAndLine() async throws {
        let fixture = try Fixture(source: Fixture.source(#"UTType(exportedAs: "org.example.y")"#))
        let (status, output) = try await fixture.check()
        #expect(status == .exited(1))
        #expect(output.contains("\(fixture.source):5: error: identity mismatch: protocolType returns \"org.example.y\" but the manifest \(fixture.manifest) says \"protocol\": \"org.example.x\""), "\(output)")
    }

    @Test func exportedIdentifierThatDisagreesIsNamedWithItsLine() async throws {
        let fixture = try Fixture(manifest: Fixture.manifest(identifier: "org.example.z"))
        let (status, output) = try await fixture.check()
        #expect(status == .exited(1))
        #expect(output.contains("\(fixture.manifest):4: error: identity mismatch: \"exportedType.identifier\" is \"org.example.z\" but \"protocol\" is \"org.example.x\""), "\(output)")
    }

    @Test func conformanceToMediaSharingProtocolIsRequired() async throws {
        let fixture = try Fixture(manifest: Fixture.manifest(conformsTo: #"["public.data"]"#))
        let (status, output) = try await fixture.check()
        #expect(status == .exited(1))
        #expect(output.contains("\(fixture.manifest):5: error: \"exportedType.conformsTo\" must contain \"public.media-sharing-protocol\" (it has \"public.data\")"), "\(output)")
    }

    @Test func constantIsFollowedIntoDependencies() async throws {
        let fixture = try Fixture(source: Fixture.source("UTType(exportedAs: XProtocol.protocolID)"),
                                  constants: "public enum XProtocol {\n    public static let protocolID = \"org.example.w\"\n}\n")
        let (status, output) = try await fixture.check()
        #expect(status == .exited(1))
        #expect(output.contains("protocolType returns \"org.example.w\" (through the constant at \(fixture.constants):2)"), "\(output)")
    }

    @Test func computedProtocolTypeIsAWarningSayingWhatCannotBeSeen() async throws {
        let fixture = try Fixture(source: Fixture.source(#"UTType(exportedAs: ProcessInfo.processInfo.environment["ID"] ?? "")"#))
        let (status, output) = try await fixture.check()
        #expect(status == .exited(0))
        #expect(output.contains("\(fixture.source):5: warning: protocolType is computed"), "\(output)")
    }

    @Test func targetNoManifestNamesIsNotADriverUnlessItsCodeIsOne() async throws {
        let fixture = try Fixture()
        let receiver = try await fixture.check(target: "x-receiver")
        #expect(receiver.status == .exited(0))
        #expect(receiver.output.contains("warning: x-receiver conforms to MediaDeviceExtension but no manifest names the executable \"x-receiver\""), "\(receiver.output)")
    }

    /// The four drivers in Protocols/ agree (the build checks them too, through the plugin).
    @Test(arguments: [("mediaroute-reference-driver", "Reference", ["Common"]), ("mediaroute-bluetooth-driver", "Bluetooth", []),
                      ("mediaroute-dlna-driver", "DLNA", []), ("mediaroute-airplay-driver", "AirPlay", [])])
    func driversInProtocolsAgree(target: String, folder: String, dependencies: [String]) async throws {
        let base = ScratchPackage.mediaRouteRoot + "/Protocols/" + folder
        func swiftFiles(_ directory: String) -> [String] {
            ((try? FileManager.default.subpathsOfDirectory(atPath: directory)) ?? []).filter { $0.hasSuffix(".swift") }.map { directory + "/" + $0 }
        }
        let manifests = ((try? FileManager.default.contentsOfDirectory(atPath: base)) ?? []).filter { $0.hasSuffix(".json") }.map { base + "/" + $0 }
        let arguments = ["--target", target] + manifests.flatMap { ["--manifest", $0] } + swiftFiles(base + "/Driver").flatMap { ["--source", $0] }
            + dependencies.flatMap { swiftFiles(base + "/" + $0) }.flatMap { ["--dependency-source", $0] }
        let log = NSTemporaryDirectory() + "identity-\(UUID().uuidString.prefix(8)).log"
        defer { try? FileManager.default.removeItem(atPath: log) }
        let descriptor = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        let process = try ChildProcess(executable: Self.tool, arguments: arguments, standardOutput: descriptor, standardError: descriptor)
        close(descriptor)
        let status = await process.exitStatus()
        let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        #expect(status == .exited(0) && output.contains("agrees in") && !output.contains("warning"), "\(output)")
    }
}
