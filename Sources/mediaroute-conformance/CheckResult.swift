import MediaRouteIPC

/// One clause of IPC/README.md checked against a driver: where it is (`section`, e.g. "§4"), what
/// it asks (`clause`), and what the driver did.
struct CheckResult: Sendable {
    enum Outcome: String, Sendable {
        case pass, fail, skip
    }

    let section: String
    let clause: String
    let outcome: Outcome
    /// What was seen (a failure), or why the check could not run (a skip); empty for a plain pass.
    let detail: String
    /// How long the check took, wall clock.
    let seconds: Double

    var json: JSONValue {
        var object: JSONObject = ["section": .string(section), "clause": .string(clause), "outcome": .string(outcome.rawValue)]
        if !detail.isEmpty { object["detail"] = .string(detail) }
        object["seconds"] = .double((seconds * 1000).rounded() / 1000)
        return .object(object)
    }
}

/// What a check decided: the outcome with its sentence, before it is placed in the report.
struct Verdict: Sendable {
    let outcome: CheckResult.Outcome
    let detail: String

    static let pass = Verdict(outcome: .pass, detail: "")
    static func pass(_ detail: String) -> Verdict { Verdict(outcome: .pass, detail: detail) }
    static func fail(_ detail: String) -> Verdict { Verdict(outcome: .fail, detail: detail) }
    static func skip(_ detail: String) -> Verdict { Verdict(outcome: .skip, detail: detail) }
}
