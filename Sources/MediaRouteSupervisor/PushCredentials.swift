import Foundation
import Glibc
import MediaRouteIPC
import Synchronization

/// Each app's push credential: 32 random bytes (/dev/urandom), in hex, that the app's server sends as
/// `authorization: bearer CREDENTIAL`. Made when the operator first asks for it
/// (`mediaroute push credential APP`), replaced on request (the old one stops working at once),
/// kept in `STATE_DIR/push-credentials.json` (0600, written atomically). A push is compared with
/// it in constant time. The file is read on first use (again while it cannot be read, which every
/// answer says; it is never overwritten then).
public final class PushCredentials: Sendable {
    public let path: String
    private let credentials = Mutex<Result<[String: String], RPCError>?>(nil)

    public init(stateDirectory: String) {
        path = (stateDirectory as NSString).appendingPathComponent("push-credentials.json")
    }

    /// `application`'s credential, made (or, with `rotate`, replaced) and saved first if needed.
    public func credential(for application: String, rotate: Bool = false) throws(RPCError) -> String {
        guard PushRequest.isApplicationIdentifier(application) else {
            throw .invalidParams("\"\(application.prefix(300))\" is not an app identifier: 1 to 255 bytes, without spaces or control characters")
        }
        return try credentials.withLock { (state: inout Result<[String: String], RPCError>?) throws(RPCError) -> String in
            var known = try loaded(&state).get()
            if !rotate, let credential = known[application] { return credential }
            let credential = try Self.random()
            known[application] = credential
            let file = JSONValue.object(JSONObject(known.sorted { $0.key < $1.key }.map { (key: $0.key, value: JSONValue.string($0.value)) }))
            do { try JSONWriter.write(file, atomicallyTo: path) } catch {
                throw RPCError(.internalError, "cannot save the push credentials to \(path): \(error); the credential was not changed")
            }
            state = .success(known)
            return credential
        }
    }

    /// Refuses `presented` unless it is `application`'s credential.
    func authorize(_ presented: String, for application: String) throws(PushRefusal) {
        let known: [String: String]
        switch credentials.withLock({ loaded(&$0) }) {
        case .success(let credentials): known = credentials
        case .failure(let error): throw PushRefusal(.internalServerError, error.message)
        }
        guard let expected = known[application] else {
            throw PushRefusal(.topicDisallowed, "\(application) has no push credential, so it takes no pushes; the operator makes one with mediaroute push credential \(application)")
        }
        guard Self.same(Array(presented.utf8), Array(expected.utf8)) else {
            throw PushRefusal(.invalidProviderToken, "the credential is not \(application)'s; use the one mediaroute push credential \(application) prints (a rotated one replaces the old)")
        }
    }

    private func loaded(_ state: inout Result<[String: String], RPCError>?) -> Result<[String: String], RPCError> {
        if case .success = state, let state { return state }
        let read = Self.read(path)
        state = read
        return read
    }

    private static func read(_ path: String) -> Result<[String: String], RPCError> {
        guard let data = FileManager.default.contents(atPath: path) else {
            return FileManager.default.fileExists(atPath: path) ? .failure(RPCError(.internalError, "cannot read the push credentials in \(path); check its owner and mode")) : .success([:])
        }
        let problem = RPCError(.internalError, "the push credentials file \(path) is damaged; remove it and make the credentials again with mediaroute push credential APP")
        guard let object = (try? JSONReader.parse(data))?.objectValue else { return .failure(problem) }
        var known: [String: String] = [:]
        for (application, value) in object.members {
            guard let credential = value.stringValue else { return .failure(problem) }
            known[application] = credential
        }
        return .success(known)
    }

    /// 32 bytes from the kernel's random source (/dev/urandom), in hex.
    private static func random() throws(RPCError) -> String {
        var bytes = [UInt8](repeating: 0, count: 32)
        let fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC)
        let count = fd < 0 ? -1 : bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        let failure = errno
        if fd >= 0 { close(fd) }
        guard count == bytes.count else { throw RPCError(.internalError, "cannot make a credential: reading /dev/urandom failed (\(String(cString: strerror(failure))))") }
        return bytes.map { String(format: "%02x", $0) }.joined()
    }

    /// Whether `a` and `b` are equal, in a time that depends only on their lengths.
    private static func same(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }
}
