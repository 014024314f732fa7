/// The lines Package.swift needs for a new driver, printed rather than written: a plugin rewriting
/// a manifest that is Swift code would break on the first one it did not expect.
struct PackageLines: Sendable {
    let names: DriverNames
    /// nil inside MediaRoute itself; else the identity of the MediaRoute dependency, as
    /// `.product(package:)` wants it (for `.package(path:)`, the folder's name).
    let mediaRoutePackage: String?

    private func product(_ name: String) -> String {
        mediaRoutePackage.map { ".product(name: \"\(name)\", package: \"\($0)\")" } ?? "\"\(name)\""
    }

    private var plugin: String {
        mediaRoutePackage.map { ".plugin(name: \"DriverIdentityPlugin\", package: \"\($0)\")" } ?? ".plugin(name: \"DriverIdentityPlugin\")"
    }

    /// Into `products:`.
    var productLine: String { ".executable(name: \"\(names.executable)\", targets: [\"\(names.executable)\"])," }

    /// Into `targets:`: the driver, with its identity checked on every build, and its test.
    var targetLines: [String] {
        // Inside MediaRoute the test runs the mediarouted and mediaroute it builds; elsewhere the installed
        // ones ($MEDIAROUTE_BIN_DIR or $PATH), so that a driver's package does not build the supervisor.
        let testDependencies = ["\"\(names.executable)\""] + (mediaRoutePackage == nil ? ["\"mediarouted\"", "\"mediaroute\""] : [])
        return [
            "// The \(names.displayName) protocol (\(names.protocolID)): its driver and its test under the supervisor.",
            ".executableTarget(name: \"\(names.executable)\", dependencies: [\(product("MediaDevice"))], path: \"Protocols/\(names.folder)/Driver\",",
            "                  plugins: [\(plugin)]),",
            ".testTarget(name: \"\(names.testTarget)\", dependencies: [\(testDependencies.joined(separator: ", "))]),",
        ]
    }

    var text: String {
        """
        Add to Package.swift (new-driver does not edit it):

          in products:
            \(productLine)

          in targets:
        \(targetLines.map { "    " + $0 }.joined(separator: "\n"))

        """
    }
}
