/// The new driver's test (Swift Testing): the driver under the real supervisor, `mediarouted`, with
/// the real `mediaroute` CLI. It needs nothing but those two programs.
enum DriverTestTemplate {
    static func text(_ names: DriverNames) -> String {
        #"""
        import Foundation
        import Testing

        /// \#(names.typeName) under the real supervisor: `mediarouted` over a drivers directory holding only its
        /// manifest, `mediaroute devices` opening the picker (which starts the driver and its discovery),
        /// and `mediaroute drivers` showing it running. Running means the supervisor accepted the manifest
        /// and the driver's handshake: the three names of \#(names.protocolID) agree.
        ///
        /// Next step: the conformance kit walks the whole IPC specification against the driver, faults
        /// included (`mediaroute-conformance MANIFEST --json`; the manifest names the executable,
        /// relative to its own folder, so give the kit a copy whose "executable" is the built program:
        /// `.build/debug/\#(names.executable)`).
        @Suite struct \#(names.testTarget) {
            static let protocolID = "\#(names.protocolID)"

            @Test func runsUnderTheSupervisorAndFindsNoDeviceYet() async throws {
                let supervisor = try LocalSupervisor(manifest: LocalSupervisor.packageRoot + "/Protocols/\#(names.folder)/\#(names.manifestFile)",
                                                     executable: try LocalSupervisor.program("\#(names.executable)"))
                defer { supervisor.stop() }
                try supervisor.start()

                // The picker starts the driver, which reports no device until its discovery is written.
                let devices = try supervisor.cli(["devices", "--wait", "1"])
                #expect(devices.status == 0, "mediaroute devices failed: \(devices.error)\n\(supervisor.log)")
                #expect(devices.output.contains("[]"), "the generated driver reports no device; mediaroute devices said: \(devices.output)")

                let drivers = try supervisor.cli(["drivers"])
                let report = try #require(LocalSupervisor.driver(Self.protocolID, in: drivers.output),
                                          "mediaroute drivers does not list \(Self.protocolID): \(drivers.output)\n\(supervisor.log)")
                #expect(report["state"] as? String == "running", "the supervisor did not keep the driver running: \(report)\n\(supervisor.log)")
                #expect(report["displayName"] as? String == "\#(names.displayName)")
            }
        }

        """#
    }

    /// The helper the test starts the supervisor with, in a file of its own.
    static func supervisorText(_ names: DriverNames) -> String {
        #"""
        import Foundation

        /// A real `mediarouted` over a temporary drivers directory with one manifest in it, and the real
        /// `mediaroute` CLI against it. Everything it starts it stops by PID; everything it makes it removes.
        ///
        /// The programs are looked for in $MEDIAROUTE_BIN_DIR, then beside the test binary (a package
        /// that builds MediaRoute's `mediarouted` and `mediaroute` products), then on $PATH.
        final class LocalSupervisor {
            let root: String
            var socket: String { root + "/mediarouted.sock" }
            var log: String { (try? String(contentsOfFile: root + "/mediarouted.log", encoding: .utf8)) ?? "" }
            private var daemon: Process?

            /// The package's root folder, from this file's place (Tests/\#(names.testTarget)/).
            static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

            struct Missing: Error, CustomStringConvertible {
                let description: String
            }

            /// The path of the program `name`.
            static func program(_ name: String) throws -> String {
                let beside = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent().path
                let environment = ProcessInfo.processInfo.environment
                let folders = [environment["MEDIAROUTE_BIN_DIR"], beside].compactMap { $0 } + (environment["PATH"] ?? "").split(separator: ":").map(String.init)
                for folder in folders where FileManager.default.isExecutableFile(atPath: folder + "/" + name) { return folder + "/" + name }
                throw Missing(description: "\(name) is not in $MEDIAROUTE_BIN_DIR, beside the test binary (\(beside)) or on $PATH: build it (`swift build --product \(name)` in its package) and set MEDIAROUTE_BIN_DIR to the folder it is in")
            }

            /// Makes the drivers directory: the manifest, its `executable` pointing at the built driver.
            init(manifest: String, executable: String) throws {
                root = NSTemporaryDirectory() + "supervisor-\(UUID().uuidString.prefix(8))"
                try FileManager.default.createDirectory(atPath: root + "/drivers", withIntermediateDirectories: true)
                guard let data = FileManager.default.contents(atPath: manifest),
                      var object = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
                    throw Missing(description: "\(manifest) cannot be read as a JSON object")
                }
                object["executable"] = executable
                try JSONSerialization.data(withJSONObject: object).write(to: URL(fileURLWithPath: root + "/drivers/" + (manifest as NSString).lastPathComponent))
            }

            /// Starts mediarouted and waits (up to 20 s) until its control socket answers.
            func start() throws {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: try Self.program("mediarouted"))
                process.arguments = ["--drivers-dir", root + "/drivers", "--state-dir", root + "/state", "--socket", socket, "--no-mpris", "--push-listen", "127.0.0.1:0"]
                guard FileManager.default.createFile(atPath: root + "/mediarouted.log", contents: nil) else {
                    throw Missing(description: "cannot create \(root)/mediarouted.log")
                }
                let log = try FileHandle(forWritingTo: URL(fileURLWithPath: root + "/mediarouted.log"))
                process.standardOutput = log
                process.standardError = log
                try process.run()
                daemon = process
                let deadline = Date().addingTimeInterval(20)
                while Date() < deadline {
                    if try cli(["status"]).status == 0 { return }
                    guard process.isRunning else { throw Missing(description: "mediarouted exited at once:\n\(self.log)") }
                    Thread.sleep(forTimeInterval: 0.05)
                }
                throw Missing(description: "mediarouted did not answer on \(socket) within 20 s:\n\(self.log)")
            }

            /// Runs `mediaroute --socket SOCKET --json ARGUMENTS`.
            func cli(_ arguments: [String]) throws -> (status: Int32, output: String, error: String) {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: try Self.program("mediaroute"))
                process.arguments = ["--socket", socket, "--json"] + arguments
                let output = Pipe(), error = Pipe()
                process.standardOutput = output
                process.standardError = error
                process.standardInput = FileHandle.nullDevice
                try process.run()
                let out = output.fileHandleForReading.readDataToEndOfFile(), err = error.fileHandleForReading.readDataToEndOfFile()
                process.waitUntilExit()
                return (process.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
            }

            /// The entry for `protocolID` in the JSON of `mediaroute drivers`.
            static func driver(_ protocolID: String, in json: String) -> [String: Any]? {
                let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
                return (object?["drivers"] as? [[String: Any]])?.first { $0["protocol"] as? String == protocolID }
            }

            /// Stops mediarouted by its PID (it stops its drivers) and removes the temporary folder.
            func stop() {
                if let daemon, daemon.isRunning {
                    kill(daemon.processIdentifier, SIGTERM)
                    daemon.waitUntilExit()
                }
                daemon = nil
                try? FileManager.default.removeItem(atPath: root)
            }
        }

        """#
    }
}
