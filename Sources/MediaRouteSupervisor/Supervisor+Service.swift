import MediaRouteIPC

extension Supervisor {
    /// One line on how the daemon is doing, for the service manager (`systemctl status`'s
    /// "Status:"): drivers running out of those known (drivers start on demand, so few may run),
    /// those that cannot run, and the routes active. It changes only when one of these counts does.
    public func serviceStatusLine() -> String {
        let statuses = driverStatuses()
        let running = statuses.filter { $0.state == .running }.count
        let failed = statuses.filter { if case .failed = $0.state { true } else { false } }.count
        let refused = statuses.filter { if case .refused = $0.state { true } else { false } }.count
        let active = routes.all.filter { $0.parent == nil }.count
        var line = "\(running) of \(statuses.count) driver\(statuses.count == 1 ? "" : "s") running"
        if failed > 0 { line += ", \(failed) failed" }
        if refused > 0 { line += ", \(refused) refused" }
        return line + "; \(active) route\(active == 1 ? "" : "s") active"
    }
}
