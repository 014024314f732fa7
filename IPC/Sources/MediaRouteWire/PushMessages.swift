import MediaRouteIPC

extension Control {
    /// An app's push credential (IPC/README.md §11.3): what the app's server sends as
    /// `authorization: bearer CREDENTIAL` to the daemon's push endpoint. Made on first request;
    /// `rotate` replaces it, and the old one stops working at once.
    package struct PushCredential: WireRequest {
        package struct Issued: Codable, Sendable {
            package let application: String
            package let credential: String
            /// The app's push-to-start token (§11.6): where a server sends `start` pushes.
            package let pushToStartToken: String
            package init(application: String, credential: String, pushToStartToken: String) {
                (self.application, self.credential, self.pushToStartToken) = (application, credential, pushToStartToken)
            }
        }
        package typealias Result = Issued
        package static let method = "push.credential"
        package let application: String
        package let rotate: Bool?
        package init(application: String, rotate: Bool) { (self.application, self.rotate) = (application, rotate) }
    }
}
