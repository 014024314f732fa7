// TEMPORARY until the MPRIS change lands.
extension Supervisor {
    func showOnDesktop(_ entry: RemoteSessionTable.Entry) {}
    func pushToStartToken(of application: String) throws -> String { "00" }
}
extension MPRISBridge {
    func setPrimary(_ key: String?) {}
    func remove(remote key: String) {}
}
