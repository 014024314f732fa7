import Foundation
import MediaRouteSupervisor

/// What one run of the kit works with: the driver's manifest, read and judged as `mediarouted`
/// reads it, a private state directory, and the bounds and answers the person gave.
struct KitSetup: Sendable {
    let manifest: DriverManifest
    /// `MEDIAROUTE_STATE_DIRECTORY` for the driver: made for the run, removed after it.
    let stateDirectory: String
    let showDriverOutput: Bool
    /// How long discovery may take to find a first device, and then to settle.
    let discoveryBound: Duration
    /// How long an outcome (activation, pairing, session start) may take to arrive.
    let outcomeBound: Duration
    /// The code that pairs a device asking for one; nil: the right-code check is skipped.
    let pairingCode: String?
    /// What `session.start` plays.
    let url: String
    /// The device application `session.start` launches (nil: a session in player mode) and data is
    /// addressed to (without one, "org.mediaroute.conformance").
    let application: String?
    var dataApplication: String { application ?? "org.mediaroute.conformance" }
    /// Devices the kit activates at most (found first, first tried).
    let deviceLimit = 4

    var heartbeatTimeout: Duration { manifest.timeouts.heartbeatTimeout }
    var requestTimeout: Duration { manifest.timeouts.request }
}
