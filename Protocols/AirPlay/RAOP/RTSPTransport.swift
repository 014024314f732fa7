/// The ports a receiver gives in its answer to SETUP (`Transport: RTP/AVP/UDP;...;server_port=;
/// control_port=;timing_port=`): where audio, sync and resends, and timing go.
public struct RTSPTransport: Sendable, Equatable {
    public let serverPort: Int
    public let controlPort: Int
    public let timingPort: Int?

    public init(serverPort: Int, controlPort: Int, timingPort: Int?) {
        self.serverPort = serverPort
        self.controlPort = controlPort
        self.timingPort = timingPort
    }

    /// Parses the header value; a missing or out-of-range server or control port is an error.
    public init(header: String) throws(RAOPError) {
        var ports: [String: Int] = [:]
        for field in header.split(separator: ";") {
            let pair = field.split(separator: "=", maxSplits: 1)
            guard pair.count == 2 else { continue }
            let name = String(pair[0]).trimmingSpaces.lowercased()
            guard ["server_port", "control_port", "timing_port"].contains(name) else { continue }
            guard let port = Int(String(pair[1]).trimmingSpaces), (1...65535).contains(port) else {
                throw RAOPError(.malformedResponse, "the receiver's SETUP Transport gives \(name)=\(pair[1].prefix(20)), not a port")
            }
            ports[name] = port
        }
        guard let server = ports["server_port"], let control = ports["control_port"] else {
            throw RAOPError(.malformedResponse, "the receiver's SETUP Transport names no server_port and control_port: \"\(header.prefix(120))\"")
        }
        self.init(serverPort: server, controlPort: control, timingPort: ports["timing_port"])
    }
}
