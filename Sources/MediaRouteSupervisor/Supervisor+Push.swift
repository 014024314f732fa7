/// Pushes to remote media sessions.
extension Supervisor {
    /// Delivers a push the endpoint accepted to the session or push-to-start token it names. No
    /// remote media sessions exist yet, so no token is known: every push is refused, honestly.
    func deliver(_ push: PushRequest) async throws(PushRefusal) {
        throw .unknownToken
    }
}
