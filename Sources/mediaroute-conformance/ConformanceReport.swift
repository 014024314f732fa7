import Foundation
import MediaRouteIPC

/// Every clause checked on one driver, in the order checked, grouped by section of IPC/README.md
/// when printed.
final class ConformanceReport: @unchecked Sendable {  // written by one task at a time (the run is sequential where it records), read once at the end; the lock makes that hold anyway
    let manifestPath: String
    private let lock = NSLock()
    private var results: [CheckResult] = []
    private let started = ContinuousClock.now

    init(manifestPath: String) { self.manifestPath = manifestPath }

    /// Runs `body` as the check of `clause` in `section` and records its verdict. A check that
    /// throws failed, with the error as what was seen.
    @discardableResult
    func check(_ section: String, _ clause: String, _ body: () async throws -> Verdict) async -> Verdict {
        let start = ContinuousClock.now
        let verdict: Verdict
        do { verdict = try await body() } catch { verdict = .fail("\(error)") }
        record(CheckResult(section: section, clause: clause, outcome: verdict.outcome, detail: verdict.detail, seconds: (ContinuousClock.now - start).seconds))
        return verdict
    }

    func skip(_ section: String, _ clause: String, because reason: String) {
        record(CheckResult(section: section, clause: clause, outcome: .skip, detail: reason, seconds: 0))
    }

    func record(_ result: CheckResult) { lock.withLock { results.append(result) } }

    var all: [CheckResult] { lock.withLock { results } }
    var failed: Bool { all.contains { $0.outcome == .fail } }

    /// Sections in the order of IPC/README.md (§2 before §11.2), each check in the order it ran.
    private var bySection: [(String, [CheckResult])] {
        var order: [String] = []
        var groups: [String: [CheckResult]] = [:]
        for result in all {
            if groups[result.section] == nil { order.append(result.section) }
            groups[result.section, default: []].append(result)
        }
        return order.sorted { Self.sectionKey($0).lexicographicallyPrecedes(Self.sectionKey($1)) }.map { ($0, groups[$0]!) }
    }

    /// "§11.2 Discovery" sorts by (11, 2); a heading without a number ("Manifest") first.
    private static func sectionKey(_ section: String) -> [Int] {
        guard section.hasPrefix("§") else { return [0] }
        let number = section.dropFirst().prefix { $0.isNumber || $0 == "." }
        return number.split(separator: ".").compactMap { Int($0) }
    }

    func text(protocolID: String?) -> String {
        var lines = ["Conformance of \(protocolID ?? "the driver") (\(manifestPath)) to IPC/README.md"]
        for (section, results) in bySection {
            lines.append("")
            lines.append(section)
            for result in results {
                let mark = switch result.outcome { case .pass: "pass"; case .fail: "FAIL"; case .skip: "skip" }
                lines.append("  \(mark)  \(result.clause)" + (result.detail.isEmpty ? "" : ": \(result.detail)"))
            }
        }
        let counts = Dictionary(grouping: all, by: \.outcome).mapValues(\.count)
        lines.append("")
        lines.append("\(counts[.pass] ?? 0) passed, \(counts[.fail] ?? 0) failed, \(counts[.skip] ?? 0) skipped in \(String(format: "%.1f", (ContinuousClock.now - started).seconds)) s")
        return lines.joined(separator: "\n") + "\n"
    }

    func json(protocolID: String?) -> String {
        let counts = Dictionary(grouping: all, by: \.outcome).mapValues(\.count)
        var object: JSONObject = ["manifest": .string(manifestPath)]
        if let protocolID { object["protocol"] = .string(protocolID) }
        object["passed"] = .integer(Int64(counts[.pass] ?? 0))
        object["failed"] = .integer(Int64(counts[.fail] ?? 0))
        object["skipped"] = .integer(Int64(counts[.skip] ?? 0))
        object["seconds"] = .double(((ContinuousClock.now - started).seconds * 1000).rounded() / 1000)
        object["sections"] = .array(bySection.map { section, results in
            .object(["section": .string(section), "checks": .array(results.map(\.json))])
        })
        return String(decoding: JSONWriter.encode(.object(object)), as: UTF8.self) + "\n"
    }
}
