import MediaRouteIPC
import MediaRouteWire

/// Every finding of a `mediaroute doctor` run, printed for people (grouped by check, each
/// problem with its fix) or as JSON.
struct DoctorReport: Codable, Sendable {
    let device: String?
    let diagnoses: [Diagnosis]
    /// `problem` if any check found one, else `warning` if any did, else `ok`.
    let verdict: Diagnosis.Verdict

    init(device: String?, diagnoses: [Diagnosis]) {
        self.device = device
        self.diagnoses = diagnoses
        let worst = diagnoses.map(\.verdict).max() ?? .ok
        verdict = worst == .skipped ? .ok : worst
    }

    static let checkTitles = ["daemon": "mediarouted", "drivers": "drivers", "avahi": "Avahi (DNS-SD)", "multicast": "network interfaces and multicast",
                              "firewall": "firewall", "device": "device"]

    var text: String {
        var lines: [String] = []
        var seen: [String] = []
        for check in diagnoses.map(\.check) where !seen.contains(check) { seen.append(check) }
        for check in seen {
            lines.append("\(Self.checkTitles[check] ?? check):")
            for diagnosis in diagnoses where diagnosis.check == check {
                lines.append("  \(Self.mark(diagnosis.verdict)) \(diagnosis.finding)")
                for detail in diagnosis.details { lines.append("      \(detail)") }
                if let fix = diagnosis.fix {
                    lines.append("      \(diagnosis.verdict == .skipped ? "why" : "fix"): \(fix)")
                }
            }
        }
        let problems = diagnoses.filter { $0.verdict == .problem }.count, warnings = diagnoses.filter { $0.verdict == .warning }.count
        lines.append(problems + warnings == 0 ? "no problem found" : "\(problems) problem\(problems == 1 ? "" : "s"), \(warnings) warning\(warnings == 1 ? "" : "s")")
        return lines.joined(separator: "\n")
    }

    static func mark(_ verdict: Diagnosis.Verdict) -> String {
        switch verdict {
        case .ok: "ok      "
        case .skipped: "skipped "
        case .warning: "warning "
        case .problem: "PROBLEM "
        }
    }
}
