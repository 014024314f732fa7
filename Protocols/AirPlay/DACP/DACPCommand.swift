/// One press on a receiver's remote control, as the receiver sends it to `/ctrl-int/1/<command>`.
public enum DACPCommand: Sendable, Equatable, CustomStringConvertible {
    case playPause
    case play
    case pause
    case stop
    case nextItem
    case previousItem
    case volumeUp
    case volumeDown
    case muteToggle
    /// Fast-forward until `playResume`.
    case beginFastForward
    /// Rewind until `playResume`.
    case beginRewind
    /// The end of a fast-forward or rewind.
    case playResume
    /// `setproperty?dmcp.device-volume=<dB>`: AirPlay's scale, −30…0, and −144 for mute.
    case setVolume(dB: Double)

    /// The commands without a value, by their name on the wire.
    static let simple: [String: DACPCommand] = [
        "playpause": .playPause, "play": .play, "pause": .pause, "stop": .stop, "nextitem": .nextItem,
        "previtem": .previousItem, "volumeup": .volumeUp, "volumedown": .volumeDown, "mutetoggle": .muteToggle,
        "beginff": .beginFastForward, "beginrew": .beginRewind, "playresume": .playResume,
    ]

    /// The lowest volume a receiver sends (mute).
    public static let mutedDB = -144.0

    /// Parses what follows `/ctrl-int/1/` in a request target: a command name, and for
    /// `setproperty` one `dmcp.device-volume=<dB>` query.
    public init(command target: Substring) throws(DACPError) {
        let name = target.prefix { $0 != "?" }
        let query = target.dropFirst(name.count + 1)
        if let command = Self.simple[String(name)] {
            guard query.isEmpty else { throw DACPError(.badValue, "\"\(name)\" takes no parameters, got \"\(query)\"") }
            self = command
            return
        }
        guard name == "setproperty" else { throw DACPError(.unknownCommand, "\"\(name)\" is not a DACP command this remote control carries out") }
        let parts = query.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0] == "dmcp.device-volume" else {
            throw DACPError(.unknownCommand, "setproperty sets dmcp.device-volume only, not \"\(query)\"")
        }
        let text = parts[1]
        guard text.utf8.count <= 24, text.utf8.allSatisfy({ (0x30...0x39).contains($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") }),
              let value = Double(text), value.isFinite else {
            throw DACPError(.badValue, "dmcp.device-volume must be a number of dB, not \"\(text)\"")
        }
        guard value == Self.mutedDB || (-30.0 ... 0.0).contains(value) else {
            throw DACPError(.badValue, "dmcp.device-volume \(text) dB is outside AirPlay's range (−30…0, or −144 for mute)")
        }
        self = .setVolume(dB: value)
    }

    public var description: String {
        if case .setVolume(let dB) = self { return "setVolume(\(dB) dB)" }
        return Self.simple.first { $0.value == self }?.key ?? "unknown"
    }
}
