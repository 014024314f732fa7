import AvahiDiscovery
import MediaDevice

/// What an AirPlay 1 receiver says of itself in its `_raop._tcp` announcement: the instance name
/// `MAC@Name` (the MAC is the stable id, the rest is what people call it) and the TXT record
/// (`et` encryption types, `cn` codecs, `pw` password, `sr`/`ss`/`ch` the audio format, `tp`
/// transports, `am` model).
struct RAOPAnnouncement: Sendable, Hashable {
    /// The receiver's hardware address, upper-case hex without separators: the device id's core.
    let address: String
    let name: String
    let host: String
    let port: Int
    let requiresPassword: Bool
    /// Only encrypted streams are accepted (`et` lists RSA but not "none", as AirPort Express and
    /// Apple TVs do).
    let requiresEncryption: Bool
    let model: String?

    var deviceID: String { "airplay:" + address }

    init(_ service: ResolvedService) throws(MediaDeviceError) {
        try self.init(instance: service.name, host: service.address, port: Int(service.port), txt: service.txt)
    }

    /// Reads an announcement; one we cannot stream to (AirPlay 2 only, another codec or format)
    /// is an error saying why, for the log.
    init(instance: String, host: String, port: Int, txt: [String: String]) throws(MediaDeviceError) {
        let parts = instance.split(separator: "@", maxSplits: 1)
        guard parts.count == 2, parts[0].count == 12, parts[0].allSatisfy(\.isHexDigit), !parts[1].isEmpty else {
            throw MediaDeviceError(.invalidDevice, "\"\(instance)\" is not named MAC@Name as AirPlay receivers are")
        }
        address = parts[0].uppercased()
        name = String(parts[1])
        self.host = host
        self.port = port
        func list(_ key: String) -> Set<String> { Set((txt[key] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }) }
        let encryptions = list("et")
        // 0: none, 1: RSA (AirPort Express); 3 (FairPlay), 4 (MFi-SAP) and 5 (FairPlay SAPv2.5)
        // are AirPlay 2's and need keys only Apple's devices hold.
        guard encryptions.isEmpty || encryptions.contains("0") || encryptions.contains("1") else {
            throw MediaDeviceError(.unsupported, "\(name) speaks AirPlay 2 only (encryption types \(encryptions.sorted().joined(separator: ","))): MediaRoute streams AirPlay 1")
        }
        requiresEncryption = !encryptions.isEmpty && !encryptions.contains("0")
        let codecs = list("cn")
        guard codecs.isEmpty || codecs.contains("1") else {
            throw MediaDeviceError(.unsupported, "\(name) takes no Apple Lossless (codecs \(codecs.sorted().joined(separator: ","))), the one codec MediaRoute sends")
        }
        guard (txt["sr"] ?? "44100") == "44100", (txt["ss"] ?? "16") == "16", (txt["ch"] ?? "2") == "2" else {
            throw MediaDeviceError(.unsupported, "\(name) wants \(txt["sr"] ?? "?") Hz, \(txt["ss"] ?? "?") bits, \(txt["ch"] ?? "?") channels; AirPlay 1 audio is 44,100 Hz, 16 bits, stereo")
        }
        let transports = list("tp").map { $0.uppercased() }
        guard transports.isEmpty || transports.contains("UDP") else {
            throw MediaDeviceError(.unsupported, "\(name) takes audio over \(transports.sorted().joined(separator: ",")) only; MediaRoute sends it over UDP")
        }
        requiresPassword = ["true", "1", "yes"].contains((txt["pw"] ?? "false").lowercased())
        model = txt["am"]
    }

    /// The device the picker shows: a TV when the receiver is an Apple TV, else a speaker.
    var device: MediaOutputDevice? {
        MediaOutputDevice(id: deviceID, displayName: String(name.prefix(128)), capabilities: [.urlPlayback, .realtimeAudioStreaming],
                          deviceType: model?.hasPrefix("AppleTV") == true ? .tv : .speaker, volumeControl: .absolute, canMute: true,
                          requiredNetworkEndpoints: [.init(host: host, port: UInt16(clamping: port))])
    }
}
