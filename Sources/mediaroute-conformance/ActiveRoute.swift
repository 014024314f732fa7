import MediaRouteWire

/// One device the kit activated for the checks that need a route: sessions, volume, data,
/// streams, deactivation. Pairing, if the device asks again, is answered with `--pairing-code`.
struct ActiveRoute: Sendable {
    let device: MediaOutputDevice
    let session: String

    static func activate(_ device: MediaOutputDevice, on driver: DriverUnderTest, setup: KitSetup, sessions: SessionNamer) async throws -> ActiveRoute {
        let session = sessions.next()
        var mark = driver.events.mark
        _ = try await driver.call(ToDriver.Activate(device: device, session: session, features: device.capabilities))
        while true {
            guard let outcome = await driver.events.first(ActivationChecks.outcomes, session: session, after: mark, within: setup.outcomeBound) else {
                throw KitError("\(device.displayName) did not report the outcome of its activation within \(setup.outcomeBound)")
            }
            switch outcome.method {
            case "device.activated": return ActiveRoute(device: device, session: session)
            case "device.pairingRequested":
                guard let code = setup.pairingCode else { throw KitError("\(device.displayName) asked for pairing again and no --pairing-code was given") }
                mark = driver.events.mark
                _ = try await driver.call(ToDriver.Pair(device: device, session: session, code: code))
            default:
                throw KitError("\(device.displayName) refused the activation: \(outcome.paramsText)")
            }
        }
    }
}
