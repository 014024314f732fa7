import ArgumentParser
import MediaRouteWire

struct Volume: SimpleCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show or change a device's volume.",
        discussion: "LEVEL is 0-100 (percent, with or without %); +N and -N step it; mute and unmute. No LEVEL shows the volume.")
    @OptionGroup var options: GlobalOptions
    @Argument(help: "The device's name or id.") var device: String
    @Argument(help: "0-100, +N, -N, mute or unmute.") var level: String?

    private var request: Control.Volume {
        get throws {
            guard let level else { return Control.Volume(device: device, action: .get) }
            switch level {
            case "mute": return Control.Volume(device: device, action: .mute)
            case "unmute": return Control.Volume(device: device, action: .unmute)
            default: break
            }
            if level.hasPrefix("+") || level.hasPrefix("-"), let steps = Int(level), (-100...100).contains(steps) {
                return Control.Volume(device: device, action: .change, value: Double(steps))
            }
            if let fraction = Self.fraction(ofPercent: level) {
                return Control.Volume(device: device, action: .set, value: fraction)
            }
            throw ValidationError("volume must be 0-100 (percent), +N, -N, mute or unmute; got \"\(level)\"")
        }
    }

    /// "30" or "30%" as 0.3, exactly what the person typed: the decimal is shifted two places and
    /// read once, so the driver gets 0.3, neither 30 / 100 rounded twice (33.3 would become
    /// 0.33299999999999996) nor a Float's 0.30000001192092896. Nil unless it is a plain number
    /// from 0 to 100.
    static func fraction(ofPercent text: String) -> Double? {
        let number = text.hasSuffix("%") ? String(text.dropLast()) : text
        guard number.wholeMatch(of: #/[0-9]+(\.[0-9]+)?/#) != nil, let fraction = Double(number + "e-2"), (0...1).contains(fraction) else { return nil }
        return fraction
    }

    func validate() throws { _ = try request }

    func run() async throws {
        let route = try await once(try request)
        options.output(route) {
            "\(route.device.displayName): volume \(route.volume.map(percent) ?? "unknown")\(route.muted == true ? ", muted" : "")"
        }
    }
}
