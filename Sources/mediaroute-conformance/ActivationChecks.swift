import MediaRouteIPC
import MediaRouteWire
import Synchronization

/// §11.2 activation and pairing: every device found (up to the kit's limit) is activated once; a
/// device that activates directly checks activation without pairing, and the first that asks for
/// pairing checks a wrong code, a cancelled prompt, and (given `--pairing-code`) the right code.
/// Returns the first device that activated, for the sessions, volume and data checks.
struct ActivationChecks {
    let setup: KitSetup
    let report: ConformanceReport
    let sessions: SessionNamer
    let section = "§11.2 Activation and pairing"
    static let outcomes: Set<String> = ["device.activated", "device.activationFailed", "device.pairingRequested"]

    func run(on driver: DriverUnderTest, devices: [MediaOutputDevice]) async -> MediaOutputDevice? {
        let clauses = ["activation without pairing: device.activate is answered, then device.activated",
                       "pairing: device.pairingRequested names the device, the session and a valid authorizationMethod",
                       "pairing with a wrong code ends in device.activationFailed 1002 or another device.pairingRequested",
                       "pairing cancelled (code null) ends in device.activationFailed 1002 (SHOULD)",
                       "pairing with the right code ends in device.activated"]
        guard !devices.isEmpty else {
            clauses.forEach { report.skip(section, $0, because: "no device was found") }
            return nil
        }
        var usable: MediaOutputDevice?
        var sawDirect = false, sawPairing = false
        for device in devices.prefix(setup.deviceLimit) {
            let session = sessions.next()
            let mark = driver.events.mark
            let outcome: DriverEvent?
            do {
                _ = try await driver.call(ToDriver.Activate(device: device, session: session, features: device.capabilities))
                outcome = await driver.events.first(Self.outcomes, session: session, after: mark, within: setup.outcomeBound)
            } catch {
                await report.check(section, "device.activate of \(device.displayName) is answered") { .fail("\(error)") }
                continue
            }
            switch outcome?.method {
            case "device.activated":
                if !sawDirect {
                    sawDirect = true
                    await report.check(section, clauses[0]) { try checkActivated(outcome!, device, session) }
                }
                usable = usable ?? device
                await deactivate(driver, device, session)
            case "device.pairingRequested":
                if !sawPairing {
                    sawPairing = true
                    if let paired = await pairingChecks(driver, device, session, outcome!, clauses: Array(clauses[1...])) { usable = usable ?? paired }
                } else {
                    _ = try? await driver.call(ToDriver.Pair(device: device, session: session, code: nil))
                    _ = await driver.events.first(["device.activationFailed", "device.activated"], session: session, after: mark, within: setup.outcomeBound)
                    await deactivate(driver, device, session)
                }
            case "device.activationFailed":
                await report.check(section, "device.activationFailed of \(device.displayName) carries a device error") {
                    let failed = try FromDriver.ActivationFailed.decode(outcome!.params)
                    return .pass("the device refused: \(failed.error)")
                }
            default:
                await report.check(section, "device.activate of \(device.displayName) is followed by device.activated, device.activationFailed or device.pairingRequested") {
                    .fail("none of them came within \(setup.outcomeBound)")
                }
                await deactivate(driver, device, session)
            }
        }
        if !sawDirect { report.skip(section, clauses[0], because: "every device tried asked for pairing or failed") }
        if !sawPairing { clauses[1...].forEach { report.skip(section, $0, because: "no device asked for pairing") } }
        return usable
    }

    private func checkActivated(_ event: DriverEvent, _ device: MediaOutputDevice, _ session: String) throws -> Verdict {
        let activated = try FromDriver.Activated.decode(event.params)
        return activated.device == device.id ? .pass(device.description) : .fail("device.activated names device \"\(activated.device)\", not \"\(device.id)\"")
    }

    /// The first pairing device: its request, a wrong code, a cancel, the right code. Returns the
    /// device if it ended activated (with the right code) and was deactivated again.
    private func pairingChecks(_ driver: DriverUnderTest, _ device: MediaOutputDevice, _ session: String, _ request: DriverEvent,
                               clauses: [String]) async -> MediaOutputDevice? {
        var method = MediaOutputDevice.AuthorizationMethod.none
        await report.check(section, clauses[0]) {
            let asked = try FromDriver.PairingRequested.decode(request.params)
            guard asked.device == device.id else { return .fail("it names device \"\(asked.device)\", not \"\(device.id)\"") }
            method = asked.authorizationMethod
            return .pass("\(device.displayName): \(Self.describe(asked.authorizationMethod))" + (asked.reason.map { ", \"\($0)\"" } ?? ""))
        }
        // A wrong code, on the session that asked.
        await report.check(section, clauses[1]) {
            let verdict = try await wrongCode(driver, device, session, method)
            await deactivate(driver, device, session)
            return verdict
        }
        // Cancelled.
        await report.check(section, clauses[2]) {
            let (session, asked) = try await activate(driver, device)
            guard asked?.method == "device.pairingRequested" else {
                await deactivate(driver, device, session)
                return .fail("the second activation did not ask for pairing again")
            }
            let outcome = try await pair(driver, device, session, code: nil)
            guard let outcome else { return .fail("no outcome within \(setup.outcomeBound)") }
            guard outcome.method == "device.activationFailed" else { return .fail("\(outcome.method) after the cancel") }
            let error = try FromDriver.ActivationFailed.decode(outcome.params).error
            return error.code == .authorizationFailed ? .pass(error.message) : .fail("the error is \(error), not 1002")
        }
        // The right code.
        guard let code = setup.pairingCode else {
            report.skip(section, clauses[3], because: "no --pairing-code was given, so the kit cannot know the right code")
            return nil
        }
        var paired: MediaOutputDevice?
        await report.check(section, clauses[3]) {
            let (session, asked) = try await activate(driver, device)
            guard let asked, asked.method == "device.pairingRequested" else {
                await deactivate(driver, device, session)
                if asked?.method == "device.activated" { paired = device; return .pass("activated without asking again (paired before)") }
                return .fail(asked.map { "\($0.method) instead of a pairing request" } ?? "no outcome within \(setup.outcomeBound)")
            }
            let outcome = try await pair(driver, device, session, code: code)
            guard let outcome else { return .fail("no outcome within \(setup.outcomeBound)") }
            guard outcome.method == "device.activated" else { return .fail("\(outcome.method) after the code \(code): \(outcome.paramsText)") }
            paired = device
            return try checkActivated(outcome, device, session)
        }
        return paired
    }

    private func wrongCode(_ driver: DriverUnderTest, _ device: MediaOutputDevice, _ session: String,
                           _ method: MediaOutputDevice.AuthorizationMethod) async throws -> Verdict {
        let mark = driver.events.mark
        let code = wrongCode(for: method)
        _ = try await driver.call(ToDriver.Pair(device: device, session: session, code: code))
        guard let outcome = await driver.events.first(Self.outcomes, session: session, after: mark, within: setup.outcomeBound) else {
            return .fail("no outcome within \(setup.outcomeBound)")
        }
        switch outcome.method {
        case "device.activationFailed":
            let error = try FromDriver.ActivationFailed.decode(outcome.params).error
            return error.code == .authorizationFailed ? .pass(error.message) : .fail("the error is \(error), not 1002")
        case "device.pairingRequested":
            // Asked again: cancel that prompt, as a person would, and expect the failure.
            let again = driver.events.mark
            _ = try await driver.call(ToDriver.Pair(device: device, session: session, code: nil))
            guard let end = await driver.events.first(["device.activationFailed", "device.activated"], session: session, after: again, within: setup.outcomeBound) else {
                return .fail("asked again, then nothing after the cancel within \(setup.outcomeBound)")
            }
            return end.method == "device.activationFailed" ? .pass("asked again; cancelled then") : .fail("activated after a wrong code and a cancel")
        default:
            return .fail("device.activated after the wrong code \(code ?? "")")
        }
    }

    /// Activates `device` on a new session; returns the session and its first outcome, if one came in time.
    private func activate(_ driver: DriverUnderTest, _ device: MediaOutputDevice) async throws -> (String, DriverEvent?) {
        let session = sessions.next()
        let mark = driver.events.mark
        _ = try await driver.call(ToDriver.Activate(device: device, session: session, features: device.capabilities))
        return (session, await driver.events.first(Self.outcomes, session: session, after: mark, within: setup.outcomeBound))
    }

    /// Answers the pairing request of `session` with `code` and returns the outcome; the session is released after.
    private func pair(_ driver: DriverUnderTest, _ device: MediaOutputDevice, _ session: String, code: String?) async throws -> DriverEvent? {
        let mark = driver.events.mark
        _ = try await driver.call(ToDriver.Pair(device: device, session: session, code: code))
        let outcome = await driver.events.first(Self.outcomes, session: session, after: mark, within: setup.outcomeBound)
        await deactivate(driver, device, session)
        return outcome
    }

    static func describe(_ method: MediaOutputDevice.AuthorizationMethod) -> String {
        switch method {
        case .numericCode(let length): "a numeric code of \(length.rawValue) digits"
        case .password: "a password"
        case .none: "no code"
        }
    }

    private func wrongCode(for method: MediaOutputDevice.AuthorizationMethod) -> String? {
        switch method {
        case .numericCode(let length):
            let zeros = String(repeating: "0", count: length.rawValue)
            return setup.pairingCode == zeros ? String(repeating: "1", count: length.rawValue) : zeros
        case .password: return "not-the-password"
        case .none: return "0000"
        }
    }

    /// Releases the session (§11.2: `device.deactivate` is answered); the checks of deactivation
    /// itself are in `SessionChecks`.
    func deactivate(_ driver: DriverUnderTest, _ device: MediaOutputDevice, _ session: String) async {
        _ = try? await driver.call(ToDriver.Deactivate(device: device, session: session))
    }
}

/// Session ids for the kit's activations, as the supervisor chooses them ("c1", "c2", ...).
final class SessionNamer: Sendable {
    private let count = Mutex(0)
    func next() -> String { "c\(count.withLock { $0 += 1; return $0 })" }
}
