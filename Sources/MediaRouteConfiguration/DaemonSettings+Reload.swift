extension DaemonSettings {
    /// What a running daemon takes of `new`: everything but the settings fixed at start (the
    /// socket, the state directory, the session bus, the push address, connections per user, the
    /// reconnect window),
    /// which keep their values; their names are returned, for the log to say they need a restart.
    public func takingLive(_ new: DaemonSettings) -> (settings: DaemonSettings, needRestart: [String]) {
        var taken = new
        var needRestart: [String] = []
        func keep<Value: Equatable>(_ key: String, _ setting: WritableKeyPath<DaemonSettings, Value>) {
            guard self[keyPath: setting] != new[keyPath: setting] else { return }
            needRestart.append(key)
            taken[keyPath: setting] = self[keyPath: setting]
        }
        keep("socket", \.socket)
        keep("stateDirectory", \.stateDirectory)
        keep("mprisBus", \.mprisBusAddress)
        keep("pushListen", \.pushListenAddress)
        keep("connectionsPerUser", \.connectionsPerUser)
        keep("reconnectWindowSeconds", \.reconnectWindow)
        return (taken, needRestart)
    }
}
