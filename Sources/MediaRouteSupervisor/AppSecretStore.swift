import Foundation
import MediaRouteIPC
import Synchronization

/// One random secret per app (`RandomToken`), kept in a file of the state
/// directory (0600, written atomically): push credentials, push-to-start tokens. Read on first use
/// (again while it cannot be read, which every answer says; it is never overwritten then).
final class AppSecretStore: Sendable {
    let path: String
    /// What the secrets are, for sentences: "push credentials".
    private let what: String
    private let secrets = Mutex<Result<[String: String], RPCError>?>(nil)

    init(path: String, what: String) {
        self.path = path
        self.what = what
    }

    /// `application`'s secret, made (or, with `rotate`, replaced) and saved first if needed.
    func secret(for application: String, rotate: Bool = false) throws(RPCError) -> String {
        guard PushRequest.isApplicationIdentifier(application) else {
            throw .invalidParams("\"\(application.prefix(300))\" is not an app identifier: 1 to 255 bytes, without spaces or control characters")
        }
        return try secrets.withLock { (state: inout Result<[String: String], RPCError>?) throws(RPCError) -> String in
            var known = try loaded(&state).get()
            if !rotate, let secret = known[application] { return secret }
            let secret = RandomToken.make()
            known[application] = secret
            let file = JSONValue.object(JSONObject(known.sorted { $0.key < $1.key }.map { (key: $0.key, value: JSONValue.string($0.value)) }))
            do { try JSONWriter.write(file, atomicallyTo: path) } catch {
                throw RPCError(.internalError, "cannot save the \(what) to \(path): \(error); nothing was changed")
            }
            state = .success(known)
            return secret
        }
    }

    /// Every app's secret, as the file says.
    func all() throws(RPCError) -> [String: String] { try secrets.withLock { loaded(&$0) }.get() }

    private func loaded(_ state: inout Result<[String: String], RPCError>?) -> Result<[String: String], RPCError> {
        if case .success = state, let state { return state }
        let read = read()
        state = read
        return read
    }

    private func read() -> Result<[String: String], RPCError> {
        guard let data = FileManager.default.contents(atPath: path) else {
            return FileManager.default.fileExists(atPath: path) ? .failure(RPCError(.internalError, "cannot read the \(what) in \(path); check its owner and mode")) : .success([:])
        }
        let problem = RPCError(.internalError, "the \(what) file \(path) is damaged; remove it and they are made again (servers then need the new ones)")
        guard let object = (try? JSONReader.parse(data))?.objectValue else { return .failure(problem) }
        var known: [String: String] = [:]
        for (application, value) in object.members {
            guard let secret = value.stringValue else { return .failure(problem) }
            known[application] = secret
        }
        return .success(known)
    }
}
