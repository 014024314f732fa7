/// Checks `condition` every 20 ms until it holds; throws, naming `what`, once `limit` has passed.
/// For daemons that say they are ready only by what they make (a socket, a bus name).
func pollUntil(_ what: String, within limit: Duration, _ condition: () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + limit
    while try await !condition() {
        guard ContinuousClock.now < deadline else { throw PrivateDaemonError("no \(what) within \(limit)") }
        try await Task.sleep(for: .milliseconds(20))
    }
}
