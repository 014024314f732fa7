import Foundation
import MediaRouteIPC
import MediaRouteWire
import ReferenceProtocol

/// Who may control the receiver: the codes it shows, the tokens of paired controllers (kept in a
/// file of their own, 0600, so they survive restarts), and the lockouts after wrong codes.
///
/// Pairing holds up the way a TV's does on a shared LAN: a code belongs to the connection that asked
/// for it (`PairingAttempts`), is void after 3 wrong codes, and wrong codes lock only the address and
/// the controller id at that address they came from (`LockoutBook`, which works out the guessing
/// rate this allows: at most 36 tries at a 4-digit code per address on the worst day, about 0.36%).
/// Used on the event loop only.
final class PairingBook: @unchecked Sendable {
    /// Who is pairing: the connection (whose attempt it is), its hello's controller id, and its address.
    struct Requester {
        let connection: ObjectIdentifier
        let controller: String
        let address: String

        var subjects: [LockoutBook.Subject] { [.address(address), .controller(controller, at: address)] }
    }

    let authorization: ReceiverAnnouncement.Authorization
    private let password: String?
    private let tokensPath: String
    private var tokens: [String: String] = [:]
    private var attempts = PairingAttempts()
    private var lockouts = LockoutBook()

    static let codeLifetime: Duration = .seconds(120)

    init(authorization: ReceiverAnnouncement.Authorization, password: String?, stateDirectory: String) throws {
        self.authorization = authorization
        self.password = password
        tokensPath = (stateDirectory as NSString).appendingPathComponent("paired-controllers.json")
        if let data = FileManager.default.contents(atPath: tokensPath) {
            guard let object = try? JSONReader.parse(Array(data)).objectValue else {
                throw ReferenceProtocolError(.badRequest, "\(tokensPath) is damaged; move it away to forget every paired controller")
            }
            for member in object.members { if let token = member.value.stringValue { tokens[member.key] = token } }
        }
    }

    func isPaired(_ controller: String, token: String) -> Bool {
        guard let known = tokens[controller] else { return false }
        return constantTimeEqual(known, token)
    }

    /// Until when the pairing `connection` began is pending, if it is.
    func pendingUntil(_ connection: ObjectIdentifier) -> ContinuousClock.Instant? {
        attempts.attempt(of: connection, now: .now)?.until
    }

    /// Starts pairing: a fresh code for the requester's connection (shown by the caller), or nothing
    /// for a password. Refused while the requester is locked out, or when too many are pending.
    func begin(for requester: Requester) throws(ReferenceProtocolError) -> (method: MediaOutputDevice.AuthorizationMethod, code: String?) {
        let now = ContinuousClock.now
        if authorization == .none { return (.none, nil) }
        if let locked = lockouts.lockedFor(requester.subjects, now: now) { throw rateLimited(for: locked) }
        let code: String
        let method: MediaOutputDevice.AuthorizationMethod
        if authorization == .password {
            (code, method) = ("", .password)
        } else {
            let length = authorization == .pin4 ? 4 : 6
            var generator = SystemRandomNumberGenerator()
            code = String((0..<length).map { _ in Character(String(Int.random(in: 0...9, using: &generator))) })
            method = .numericCode(length: length == 4 ? .fourCharacter : .sixCharacter)
        }
        try attempts.begin(.init(controller: requester.controller, address: requester.address, code: code, until: now + Self.codeLifetime),
                           on: requester.connection, now: now)
        return (method, authorization == .password ? nil : code)
    }

    /// Checks a code against the requester's own attempt; on success the controller is paired and gets its token.
    func finish(for requester: Requester, code: String) throws(ReferenceProtocolError) -> String {
        let now = ContinuousClock.now
        if let locked = lockouts.lockedFor(requester.subjects, now: now) { throw rateLimited(for: locked) }
        guard let attempt = attempts.attempt(of: requester.connection, now: now) else {
            throw ReferenceProtocolError(.noPairingInProgress, "no pairing in progress on this connection (or its code expired); call pair.begin first")
        }
        let expected = authorization == .password ? (password ?? "") : attempt.code
        guard constantTimeEqual(expected, code) else {
            let void = attempts.wrongCode(on: requester.connection, allowed: LockoutBook.failuresPerLockout)
            switch lockouts.recordFailure(requester.subjects, now: now) {
            case .locked(let length):
                attempts.end(requester.connection)
                throw rateLimited(for: length)
            case .attemptsLeft(let left) where void:
                // This code is spent; the next pair.begin shows a new one (the book allows more).
                throw ReferenceProtocolError(.noPairingInProgress, "that was the last try for this code; call pair.begin for a new one (\(left) more before pairing is locked)")
            case .attemptsLeft(let left):
                throw ReferenceProtocolError(.wrongCode, "wrong \(authorization == .password ? "password" : "code"); \(left) attempt\(left == 1 ? "" : "s") left before pairing is locked",
                                             data: ["attemptsLeft": .integer(Int64(left))])
            }
        }
        var generator = SystemRandomNumberGenerator()
        let token = (0..<4).map { _ in String(format: "%016llx", generator.next() as UInt64) }.joined()
        let previous = tokens[attempt.controller]
        tokens[attempt.controller] = token
        do {
            try save()
        } catch {
            tokens[attempt.controller] = previous  // a token lost at the next restart is worse than none
            throw error
        }
        attempts.end(requester.connection)
        lockouts.forgive(requester.subjects)
        return token
    }

    /// The connection closed: its attempt, if any, is over.
    func connectionClosed(_ connection: ObjectIdentifier) {
        attempts.end(connection)
    }

    private func rateLimited(for length: Duration) -> ReferenceProtocolError {
        let seconds = max(1, length.components.seconds + (length.components.attoseconds > 0 ? 1 : 0))  // whole seconds, rounded up
        return ReferenceProtocolError(.rateLimited, "too many wrong codes; pairing is locked for \(seconds) more seconds",
                                      data: ["retryAfterSeconds": .integer(seconds)])
    }

    private func save() throws(ReferenceProtocolError) {
        let json = JSONValue.object(JSONObject(tokens.sorted { $0.key < $1.key }.map { (key: $0.key, value: .string($0.value)) }))
        do {
            try JSONWriter.write(json, atomicallyTo: tokensPath)
        } catch {
            throw ReferenceProtocolError(.unsupported, "the receiver cannot keep the pairing: \(error); free space in its state directory and pair again")
        }
    }

    /// Compares without returning early, so timing says nothing about how much of a code was right.
    private func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        var difference = UInt8(x.count == y.count ? 0 : 1)
        for i in 0..<max(x.count, y.count) { difference |= (i < x.count ? x[i] : 0) ^ (i < y.count ? y[i] : 0) }
        return difference == 0
    }
}
