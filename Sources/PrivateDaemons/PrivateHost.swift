/// A namespace on a `PrivateNetwork`: one machine on the LAN, with one interface and one address.
public struct PrivateHost: Sendable {
    public let namespace: String
    public let address: String
    public let interface: String
    /// The network it is on: what runs on the host is stopped when the network is destroyed.
    public let network: PrivateNetwork
}
