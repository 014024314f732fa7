import Foundation
import MediaRouteWire

/// Plain-text tables for people: columns padded to their widest cell.
func table(_ header: [String], _ rows: [[String]]) -> String {
    guard !rows.isEmpty else { return "" }
    var widths = header.map(\.count)
    for row in rows { for (i, cell) in row.enumerated() where i < widths.count { widths[i] = max(widths[i], cell.count) } }
    func line(_ cells: [String]) -> String {
        cells.enumerated().map { i, cell in i == cells.count - 1 ? cell : cell.padding(toLength: widths[i], withPad: " ", startingAt: 0) }
            .joined(separator: "  ")
    }
    return ([line(header)] + rows.map(line)).joined(separator: "\n")
}

func duration(_ seconds: Int?) -> String {
    guard let seconds else { return "-" }
    if seconds < 60 { return "\(seconds)s" }
    if seconds < 3600 { return "\(seconds / 60)m\(seconds % 60)s" }
    return "\(seconds / 3600)h\(seconds / 60 % 60)m"
}

/// A level of 0...1 as people read it: "30%".
func percent(_ level: Float) -> String { "\(Int((Double(level) * 100).rounded()))%" }

func describeRoute(_ route: RouteDescription) -> [String] {
    var state = route.playback?.status.state.rawValue ?? "active"
    if let until = route.reconnectingUntil { state = "reconnecting until \(clockTime(until))" + (route.playback.map { " (\($0.status.state.rawValue))" } ?? "") }
    let position = route.playback.map { "\(Int($0.status.position))s" } ?? "-"
    let volume = route.volume.map { percent($0) + (route.muted == true ? " (muted)" : "") } ?? "-"
    return [route.device.displayName, route.protocolName, route.session, state, position, volume, route.url ?? "-"]
}

/// A time of day as people read it, "14:05" (local time), from seconds since 1970.
func clockTime(_ seconds: Double) -> String {
    let formatter = DateFormatter()
    formatter.dateFormat = "HH:mm"
    return formatter.string(from: Date(timeIntervalSince1970: seconds))
}

let routeHeader = ["DEVICE", "PROTOCOL", "SESSION", "STATE", "POSITION", "VOLUME", "URL"]
