import Foundation

/// A line for the operator: a driver's standard error goes to mediarouted's log.
func log(_ message: String) {
    FileHandle.standardError.write(Data("\(message)\n".utf8))
}
