import Logging

// What a log line is about, as swift-log metadata: journald keeps each key as a field of its own
// (`MEDIAROUTE_DRIVER`, `MEDIAROUTE_DEVICE`, `MEDIAROUTE_ROUTE`, `MEDIAROUTE_SESSION`; see
// `JournalLogHandler`), and stderr shows them after the message. A NowPlaying remote session is
// `session`, given where it is logged.

extension DriverRecord {
    /// The driver (or NowPlaying extension) a line is about.
    var logMetadata: Logger.Metadata { ["driver": .string(id)] }
}

extension ActiveRoute {
    /// The route a line is about: its driver, its device's name and its identifier.
    var logMetadata: Logger.Metadata { ["driver": .string(record.id), "device": .string(device.displayName), "route": .string(session.id)] }
}
