import MediaDevice
import MediaRouteIPC

/// Pushes to remote media sessions: `start` to an app's push-to-start token, `update` and `end` to
/// a session's token. A push older than the newest one a session took changes nothing.
extension Supervisor {
    func deliver(_ push: PushRequest) async throws(PushRefusal) {
        let application = push.applicationIdentifier, origin = RemoteOrigin.push(timestamp: Double(push.timestamp))
        if let entry = remote.entry(pushToken: push.token) {
            guard entry.application == application else { throw .deviceTokenNotForTopic(push.token, application: application) }
            guard push.event != .start else {
                throw PushRefusal(.wrongTokenForEvent, "a start goes to \(application)'s push-to-start token; this token is the session \"\(entry.id)\"'s, for its updates and end")
            }
            guard push.id == entry.id else { throw .idMismatch(push.id, expected: entry.id) }
            let ignored = { [logger] (newest: Double) in
                logger.info("push \(push.event.rawValue) of the session \"\(entry.id)\" of \(application) ignored: its timestamp \(push.timestamp) is older than the newest taken (\(Int64(newest)))")
            }
            guard origin.timestamp >= entry.timestamp else { return ignored(entry.timestamp) }
            try await refusing {
                if push.event == .end {
                    try endRemoteSession(application: application, id: entry.id)
                } else if case .stale(let newest) = try await updateRemoteSession(application: application, id: entry.id, attributes: .object(push.attributes),
                                                                                   origin: origin) {
                    ignored(newest)
                }
            }
        } else if let owner = try startTokenOwner(push.token) {
            guard owner == application else { throw .deviceTokenNotForTopic(push.token, application: application) }
            guard push.event == .start else {
                throw PushRefusal(.wrongTokenForEvent, "an \(push.event.rawValue) goes to the session's own push token; this is \(application)'s push-to-start token, for starts")
            }
            try await refusing { _ = try await startRemoteSession(application: application, attributes: .object(push.attributes), origin: origin) }
        } else if remote.retired(push.token) {
            throw .unregistered(push.token)
        } else {
            throw .unknownToken
        }
    }

    /// `application`'s push-to-start token (hex), made on first use and kept across restarts.
    func pushToStartToken(of application: String) throws(RPCError) -> String {
        try pushToStartTokens.secret(for: application)
    }

    /// `application`'s push-to-start token if it has one, made nowhere: an app that connects hears
    /// it, since it may have been replaced while the app was away.
    func existingPushToStartToken(of application: String) -> String? { try? pushToStartTokens.all()[application] }

    /// Replaces `application`'s push-to-start token with a new one (the old one is no longer
    /// valid) and tells the app; done with its push credential.
    func rotatePushToStartToken(of application: String) throws(RPCError) {
        let token = try pushToStartTokens.secret(for: application, rotate: true)
        publish(.pushToStartToken(application: application, token: token))
    }

    /// The app whose push-to-start token this is, if any.
    private func startTokenOwner(_ token: String) throws(PushRefusal) -> String? {
        let tokens: [String: String]
        do { tokens = try pushToStartTokens.all() } catch { throw PushRefusal(.internalServerError, error.message) }
        return tokens.first { RandomToken.same($0.value, token) }?.key
    }

    /// What a session's side refused, as the push's answer: the extension's own failures are the
    /// server's to retry later, the rest are the push's.
    private func refusing(_ body: () async throws -> Void) async throws(PushRefusal) {
        do {
            try await body()
        } catch let error as MediaDeviceError {
            switch error.code {
            case .driverFailed, .timedOut: throw PushRefusal(.internalServerError, error.message)
            default: throw PushRefusal(.sessionRefused, error.message)
            }
        } catch {
            throw PushRefusal(.internalServerError, "\(error)")
        }
    }
}
