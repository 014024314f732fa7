import MediaRouteIPC

extension Control {
    /// What a driver last wrote to its log (IPC/README.md §11.3): the lines the supervisor kept of
    /// its standard error, across its restarts, oldest first. `mediaroute doctor` reads them to say
    /// why a driver did not list a device it heard of ("not listing ...: AirPlay 2 only").
    package struct DriverLog: WireRequest {
        package typealias Result = DriverLogLines
        package static let method = "drivers.log"
        /// One driver's lines, or every driver's when absent.
        package let `protocol`: String?
        package init(protocol: String? = nil) { self.protocol = `protocol` }
    }

    package struct DriverLogLines: Codable, Sendable {
        package let lines: [DriverLogLine]
        package init(lines: [DriverLogLine]) { self.lines = lines }
    }
}

/// One line a driver wrote, and how long ago the supervisor read it.
package struct DriverLogLine: Codable, Sendable, Hashable {
    package let `protocol`: String
    package let secondsAgo: Int
    package let text: String
    package init(protocol: String, secondsAgo: Int, text: String) { (self.protocol, self.secondsAgo, self.text) = (`protocol`, secondsAgo, text) }
}
