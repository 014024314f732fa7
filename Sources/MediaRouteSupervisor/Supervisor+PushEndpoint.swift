import MediaRouteIPC

/// Pushes from app servers: the endpoint they arrive at, and each app's credential.
extension Supervisor {
    /// Starts the push endpoint; one that cannot listen is said in the log, and the daemon runs
    /// without it (`mediaroute status` shows no push address).
    func acceptPushes(at address: PushListenAddress) async {
        if !address.isLoopback {
            logger.warning("the push endpoint listens on \(address), beyond this machine: anyone who can reach it and holds an app's credential can push")
        }
        // Weakly: the endpoint's connections must not keep a stopped supervisor alive.
        let deliver: PushEndpoint.Delivery = { [weak self] push throws(PushRefusal) in
            guard let self else { throw PushRefusal(.serviceUnavailable, "mediarouted is stopping; push again once it runs") }
            try await self.deliver(push)
        }
        do {
            let endpoint = try await PushEndpoint.start(at: address, credentials: pushCredentials, logger: logger, deliver: deliver)
            pushEndpoint = endpoint
            logger.info("accepting pushes on \(endpoint.address)")
        } catch {
            logger.error("\(error); pushes are not accepted (pass --push-listen HOST:PORT with a free port, or --no-push)")
        }
    }

    /// Where the push endpoint listens, if it does.
    public var pushAddress: PushListenAddress? { pushEndpoint?.address }

    /// `application`'s push credential for its server, made (or with `rotate` replaced) if needed.
    func pushCredential(for application: String, rotate: Bool) throws(RPCError) -> String {
        let credential = try pushCredentials.credential(for: application, rotate: rotate)
        if rotate {
            try rotatePushToStartToken(of: application)
            logger.notice("replaced the push credential and the push-to-start token of \(application); the old ones no longer work")
        }
        return credential
    }
}
