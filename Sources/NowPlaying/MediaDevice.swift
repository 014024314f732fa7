/// A device a remote session plays on, and how the system may change its volume.
///
/// This type shares its name with the driver SDK's module `MediaDevice`. A file that imports both
/// modules writes this one as `NowPlaying.MediaDevice`; the SDK's types (`MediaOutputDevice`, ...)
/// have names of their own and need no qualification.
public struct MediaDevice: Identifiable, Sendable {
    /// Chooses the icon the desktop shows.
    public enum DeviceType: String, Hashable, Sendable, CaseIterable {
        case car, desktop, gamingConsole, laptop, mediaStick, phone, setTopBox, speaker, wearable, speakerGroup, tvAndSpeaker
    }

    /// What the system can do to the device.
    public struct Capability: Sendable {
        enum Volume: Sendable {
            case absolute(level: Float, onChange: @Sendable (Float) async throws -> Void)
            case relative(onIncrement: @Sendable () async throws -> Void, onDecrement: @Sendable () async throws -> Void)
        }
        let volume: Volume

        /// A volume from 0 (silent) to 1, now at `currentLevel`: `onChange` gets the level asked for.
        public static func absoluteVolume(_ currentLevel: Float, onChange: @escaping @Sendable (Float) async throws -> Void) -> Capability {
            Capability(volume: .absolute(level: currentLevel, onChange: onChange))
        }

        /// A volume that only goes up or down a step.
        public static func relativeVolume(onIncrement: @escaping @Sendable () async throws -> Void,
                                          onDecrement: @escaping @Sendable () async throws -> Void) -> Capability {
            Capability(volume: .relative(onIncrement: onIncrement, onDecrement: onDecrement))
        }
    }

    public let id: String
    public let name: String
    public let type: DeviceType
    public let capabilities: [Capability]

    public init(id: String, name: String, type: DeviceType, capabilities: [Capability]) {
        self.id = id
        self.name = name
        self.type = type
        self.capabilities = capabilities
    }
}

extension MediaDevice: Equatable {
    /// Devices are the same when they say the same; their closures are not compared.
    public static func == (lhs: MediaDevice, rhs: MediaDevice) -> Bool {
        lhs.id == rhs.id && lhs.name == rhs.name && lhs.type == rhs.type && lhs.capabilities.map(\.shown) == rhs.capabilities.map(\.shown)
    }
}

extension MediaDevice.Capability {
    /// What the desktop sees of it.
    var shown: RemoteSessionWireVolume {
        switch volume {
        case .absolute(let level, _): .absolute(level)
        case .relative: .relative
        }
    }
}

/// A capability as it is shown, without its closures.
enum RemoteSessionWireVolume: Equatable {
    case absolute(Float)
    case relative
}
