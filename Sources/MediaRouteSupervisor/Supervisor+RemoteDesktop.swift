// TEMPORARY until the MPRIS change lands.
extension Supervisor {
    func showOnDesktop(_ entry: RemoteSessionTable.Entry) {}
}
extension MPRISBridge {
    func setPrimary(_ key: String?) {}
    func remove(remote key: String) {}
}
extension MPRISBridge {
    static func busName(remote key: String, primary: Bool) -> String { "" }
    static func busName(route session: String) -> String { "" }
}
