import Glibc

extension sockaddr_in {
    /// The IPv4 address `host:port`; `host` must be numeric. The error names `operation`.
    init(numericHost host: String, port: UInt16, for operation: String) throws(IPCSystemError) {
        self.init()
        sin_family = sa_family_t(AF_INET)
        sin_port = port.bigEndian
        guard inet_pton(AF_INET, host, &sin_addr) == 1 else { throw IPCSystemError("\(operation) (not a numeric IPv4 address)", errno: EINVAL) }
    }
}
