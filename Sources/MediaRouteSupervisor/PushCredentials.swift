import Foundation
import MediaRouteIPC
import Synchronization

/// Each app's push credential, that the app's server sends as `authorization: bearer CREDENTIAL`.
/// Made when the operator first asks for it (`mediaroute push credential APP`), replaced on request
/// (the old one stops working at once), kept in `STATE_DIR/push-credentials.json`. A push is
/// compared with it in constant time.
public final class PushCredentials: Sendable {
    private let store: AppSecretStore
    public var path: String { store.path }

    public init(stateDirectory: String) {
        store = AppSecretStore(path: (stateDirectory as NSString).appendingPathComponent("push-credentials.json"), what: "push credentials")
    }

    /// `application`'s credential, made (or, with `rotate`, replaced) and saved first if needed.
    public func credential(for application: String, rotate: Bool = false) throws(RPCError) -> String {
        try store.secret(for: application, rotate: rotate)
    }

    /// Refuses `presented` unless it is `application`'s credential.
    func authorize(_ presented: String, for application: String) throws(PushRefusal) {
        let known: [String: String]
        do { known = try store.all() } catch { throw PushRefusal(.internalServerError, error.message) }
        guard let expected = known[application] else {
            throw PushRefusal(.topicDisallowed, "\(application) has no push credential, so it takes no pushes; the operator makes one with mediaroute push credential \(application)")
        }
        guard RandomToken.same(presented, expected) else {
            throw PushRefusal(.invalidProviderToken, "the credential is not \(application)'s; use the one mediaroute push credential \(application) prints (a rotated one replaces the old)")
        }
    }
}
