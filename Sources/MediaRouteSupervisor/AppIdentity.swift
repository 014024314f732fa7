import MediaDevice
import MediaRouteIPC

/// An app connected to the supervisor: its identifier (what a `.application` session launches on
/// the device) and the protocols it declared (its MDESupportedProtocols). An app sees and uses only
/// routes of those protocols, and only its own sessions.
struct AppIdentity: Sendable {
    let id: ClientID
    let applicationIdentifier: String
    let supportedProtocols: Set<String>

    /// Reads the identity an app gives in `hello`; the error names the member that is wrong.
    init(id: ClientID, hello: Hello) throws(RPCError) {
        self.id = id
        let identity = try AppHelloIdentity(hello.identity)
        let application = identity.applicationIdentifier ?? identity.name
        guard !application.isEmpty, application.utf8.count <= 255 else {
            throw .invalidParams("an app's hello needs \"identity.applicationIdentifier\", 1 to 255 bytes")
        }
        var protocols = Set<String>()
        for id in identity.supportedProtocols ?? [] {
            guard UTType(exportedAs: id).isWellFormed else {
                throw .invalidParams("\"identity.supportedProtocols\" must list reverse-DNS protocol identifiers (MDESupportedProtocols), not \"\(id)\"")
            }
            protocols.insert(id)
        }
        applicationIdentifier = application
        supportedProtocols = protocols
    }

    func mayUse(protocol protocolID: String) -> Bool { supportedProtocols.contains(protocolID) }

    /// Refuses a route of a protocol the app did not declare, naming it.
    func check(_ route: ActiveRoute) throws(MediaDeviceError) {
        guard mayUse(protocol: route.record.id) else {
            throw MediaDeviceError(.deviceNotFound, "\(applicationIdentifier) did not declare \(route.record.id) among its supported protocols, so it cannot use that route")
        }
    }
}
