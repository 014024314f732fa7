import MediaRouteIPC

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

func duration(_ seconds: Int64?) -> String {
    guard let seconds else { return "-" }
    if seconds < 60 { return "\(seconds)s" }
    if seconds < 3600 { return "\(seconds / 60)m\(seconds % 60)s" }
    return "\(seconds / 3600)h\(seconds / 60 % 60)m"
}

func describeRoute(_ route: JSONValue) -> [String] {
    let object = route.objectValue ?? [:]
    let device = object["device"]?.objectValue?["displayName"]?.stringValue ?? "?"
    let playback = object["playback"]?.objectValue
    let state = playback?["state"]?.stringValue ?? "active"
    let position = playback?["position"]?.doubleValue.map { "\(Int($0))s" } ?? "-"
    let volume = object["volume"]?.doubleValue.map { "\(Int(($0 * 100).rounded()))%" + (object["muted"]?.boolValue == true ? " (muted)" : "") } ?? "-"
    return [device, object["protocolName"]?.stringValue ?? "?", object["session"]?.stringValue ?? "?", state, position, volume, object["url"]?.stringValue ?? "-"]
}

let routeHeader = ["DEVICE", "PROTOCOL", "SESSION", "STATE", "POSITION", "VOLUME", "URL"]
