import Foundation
import MediaRouteIPC
import ReferenceProtocol

/// Who may control the receiver: the codes it shows, the tokens of paired controllers (kept in a
/// file of their own, 0600, so they survive restarts), and the lockout after wrong codes.
/// Used on the event loop only.
final class PairingBook: @unchecked Sendable {
    let authorization: ReceiverAnnouncement.Authorization
    private let password: String?
    private let tokensPath: String
    private var tokens: [String: String] = [:]
    /// The code shown for each controller that began pairing, and until when it is valid.
    private var pending: [String: (code: String, until: ContinuousClock.Instant)] = [:]
    private var consecutiveFailures = 0
    private var lockouts = 0
    private var lockedUntil: ContinuousClock.Instant?

    static let codeLifetime: Duration = .seconds(120)
    /// Pairings in progress at once: anyone may claim a new controllerId, so this is bounded.
    static let maximumPending = 16
    static let attemptsBeforeLockout = 3
    static let firstLockout: Duration = .seconds(30)

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

    /// Starts pairing: a fresh code for `controller` (shown by the caller), or nothing for a password.
    func begin(for controller: String) -> (method: JSONValue, code: String?) {
        let now = ContinuousClock.now
        pending = pending.filter { $0.value.until > now }
        if pending[controller] == nil, pending.count >= Self.maximumPending,
           let oldest = pending.min(by: { $0.value.until < $1.value.until })?.key {
            pending[oldest] = nil
        }
        switch authorization {
        case .pin4, .pin6:
            let length = authorization == .pin4 ? 4 : 6
            var generator = SystemRandomNumberGenerator()
            let code = String((0..<length).map { _ in Character(String(Int.random(in: 0...9, using: &generator))) })
            pending[controller] = (code, .now + Self.codeLifetime)
            return (["type": "numericCode", "length": .integer(Int64(length))], code)
        case .password:
            pending[controller] = ("", .now + Self.codeLifetime)
            return (["type": "password"], nil)
        case .none:
            return (["type": "none"], nil)
        }
    }

    /// Checks a code; on success the controller is paired and gets its token.
    func finish(for controller: String, code: String) throws(ReferenceProtocolError) -> String {
        if let lockedUntil, lockedUntil > .now {
            throw rateLimited(until: lockedUntil)
        }
        guard let started = pending[controller], started.until > .now else {
            throw ReferenceProtocolError(.noPairingInProgress, "no pairing in progress for this controller (or its code expired); call pair.begin first")
        }
        let expected = authorization == .password ? (password ?? "") : started.code
        guard constantTimeEqual(expected, code) else {
            consecutiveFailures += 1
            if consecutiveFailures >= Self.attemptsBeforeLockout {
                consecutiveFailures = 0
                lockouts += 1
                let until = ContinuousClock.now + Self.firstLockout * (1 << min(lockouts - 1, 6))
                lockedUntil = until
                pending[controller] = nil
                throw rateLimited(until: until)
            }
            let left = Self.attemptsBeforeLockout - consecutiveFailures
            throw ReferenceProtocolError(.wrongCode, "wrong \(authorization == .password ? "password" : "code"); \(left) attempt\(left == 1 ? "" : "s") left before pairing is locked",
                                         data: ["attemptsLeft": .integer(Int64(left))])
        }
        consecutiveFailures = 0
        pending[controller] = nil
        var generator = SystemRandomNumberGenerator()
        let token = (0..<4).map { _ in String(format: "%016llx", generator.next() as UInt64) }.joined()
        let previous = tokens[controller]
        tokens[controller] = token
        do {
            try save()
        } catch {
            tokens[controller] = previous  // a token lost at the next restart is worse than none
            throw error
        }
        return token
    }

    private func rateLimited(until: ContinuousClock.Instant) -> ReferenceProtocolError {
        let seconds = Int64(((until - .now).components.seconds) + 1)
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
