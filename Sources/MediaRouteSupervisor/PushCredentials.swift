import Foundation
import Glibc
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
        guard AppSecretStore.same(Array(presented.utf8), Array(expected.utf8)) else {
            throw PushRefusal(.invalidProviderToken, "the credential is not \(application)'s; use the one mediaroute push credential \(application) prints (a rotated one replaces the old)")
        }
    }
}

/// One random secret per app (32 bytes from /dev/urandom, in hex), kept in a file of the state
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
            let secret = try Self.random()
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

    /// 32 bytes from the kernel's random source (/dev/urandom), in hex.
    static func random() throws(RPCError) -> String {
        var bytes = [UInt8](repeating: 0, count: 32)
        let fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC)
        let count = fd < 0 ? -1 : bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        let failure = errno
        if fd >= 0 { close(fd) }
        guard count == bytes.count else { throw RPCError(.internalError, "cannot make a secret: reading /dev/urandom failed (\(String(cString: strerror(failure))))") }
        return bytes.map { String(format: "%02x", $0) }.joined()
    }

    /// Whether `a` and `b` are equal, in a time that depends only on their lengths.
    static func same(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }
}
