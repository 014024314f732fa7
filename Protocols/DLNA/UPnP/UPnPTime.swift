/// AVTransport's durations and positions: `H+:MM:SS[.F+]` or `H+:MM:SS[.F0/F1]` (AVTransport:1 §2.2.15).
public enum UPnPTime {
    /// Seconds, or nil for `NOT_IMPLEMENTED`, empty and malformed values.
    public static func seconds(_ text: String) -> Double? {
        let parts = text.trimmed.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3, let hours = Int(parts[0]), let minutes = Int(parts[1]), hours >= 0, (0..<60).contains(minutes) else { return nil }
        let secondsPart = parts[2].split(separator: ".", maxSplits: 1)
        guard let whole = secondsPart.first.flatMap({ Int($0) }), (0..<60).contains(whole) else { return nil }
        var fraction = 0.0
        if secondsPart.count == 2 {
            let text = secondsPart[1]
            if let slash = text.firstIndex(of: "/") {
                guard let numerator = Double(text[..<slash]), let denominator = Double(text[text.index(after: slash)...]), denominator > 0 else { return nil }
                fraction = numerator / denominator
            } else {
                guard let value = Double("0." + text) else { return nil }
                fraction = value
            }
        }
        return Double(hours * 3600 + minutes * 60 + whole) + fraction
    }

    /// `H:MM:SS` (whole seconds, as REL_TIME seek targets are written).
    public static func format(_ seconds: Double) -> String {
        let total = max(0, Int(seconds.rounded()))
        let (hours, minutes, rest) = (total / 3600, total / 60 % 60, total % 60)
        return "\(hours):\(minutes < 10 ? "0" : "")\(minutes):\(rest < 10 ? "0" : "")\(rest)"
    }
}
