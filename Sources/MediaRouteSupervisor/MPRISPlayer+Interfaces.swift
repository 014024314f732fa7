import DBus

/// The two MPRIS interfaces a player exports, answered from the item shown and the commands.
extension MPRISPlayer {
    typealias Action = @Sendable () async throws -> Void

    /// The player's buttons that take no argument.
    enum Button: String, Sendable {
        case play = "Play", pause = "Pause", playPause = "PlayPause", stop = "Stop", next = "Next", previous = "Previous"
    }

    /// What `button` does now: nil when the session has it but not enabled now (MPRIS: no effect);
    /// an error saying why when it never has it, or nothing can be controlled, or MPRIS asks for
    /// one (PlayPause with CanPause false).
    func action(for button: Button) throws(DBusError) -> Action? {
        guard item.canControl else { throw Self.notSupported("\(button.rawValue): \(item.identity) cannot be controlled from here") }
        let shown = shown
        switch button {
        case .play: return try available(commands.play, button).flatMap { shown.canPlay ? $0 : nil }
        case .pause: return try available(commands.pause, button).flatMap { shown.canPause ? $0 : nil }
        case .next: return try available(commands.next, button).flatMap { shown.canGoNext ? $0 : nil }
        case .previous: return try available(commands.previous, button).flatMap { shown.canGoPrevious ? $0 : nil }
        case .stop: return try available(commands.stop, button)
        case .playPause:
            if let toggle = commands.playPause {
                guard shown.canPause else { throw Self.notSupported("PlayPause: \(item.identity) cannot pause now") }
                return toggle
            }
            let playing = item.status == .playing
            guard let action = playing ? commands.pause : commands.play, playing ? shown.canPause : shown.canPlay else {
                throw Self.notSupported("PlayPause: \(item.identity) cannot \(playing ? "pause" : "play") now")
            }
            return action
        }
    }

    private func available(_ action: Action?, _ button: Button) throws(DBusError) -> Action? {
        guard let action else { throw Self.notSupported("\(button.rawValue): \(item.identity) has no such command") }
        return action
    }

    /// Where a seek to `seconds` from the start goes: nil when seeking is not possible now (MPRIS:
    /// no effect); an error when the session never seeks.
    func seekAction() throws(DBusError) -> (@Sendable (Double) async throws -> Void)? {
        guard item.canControl else { throw Self.notSupported("Seek: \(item.identity) cannot be controlled from here") }
        guard let seek = commands.seek else { throw Self.notSupported("Seek: \(item.identity) cannot seek") }
        return shown.canSeek ? seek : nil
    }

    /// What a Rate written does: 0 pauses, as MPRIS has it; another rate goes to the session when
    /// it can change, within the rates offered; the rate already shown does nothing.
    func rateAction(_ rate: Double) throws(DBusError) -> Action? {
        guard item.canControl else { throw Self.notSupported("Rate: \(item.identity) cannot be controlled from here") }
        if rate == 0 { return try action(for: .pause) }
        if let setRate = commands.setRate {
            let clamped = min(max(rate, MPRISItem.settableRates.lowerBound), MPRISItem.settableRates.upperBound)
            return { try await setRate(clamped) }
        }
        guard rate != item.rate else { return nil }
        throw Self.notSupported("Rate: \(item.identity) plays at \(item.rate) only")
    }

    /// What a Volume written does: the session's volume, or an error when it has no volume control.
    func volumeAction(_ level: Double) throws(DBusError) -> Action {
        guard item.canControl else { throw Self.notSupported("Volume: \(item.identity) cannot be controlled from here") }
        guard item.volume != nil, let setVolume = commands.setVolume else { throw Self.notSupported("Volume: \(item.identity) has no volume control") }
        let clamped = min(max(level, 0), 1)
        return { try await setVolume(clamped) }
    }

    static func notSupported(_ sentence: String) -> DBusError { DBusError(name: "org.mpris.MediaPlayer2.Error.NotSupported", message: sentence) }

    /// What a command's failure says to the caller: the session's sentence.
    static func perform(_ body: Action) async throws(DBusError) {
        do { try await body() } catch { throw DBusError(name: DBusError.failed, message: "\(error)") }
    }

    nonisolated var application: DBusInterface {
        DBusInterface(Self.applicationInterface, methods: [
            DBusMethod("Raise") { _ in [] },
            DBusMethod("Quit") { _ in [] },
        ], properties: [
            DBusProperty("CanQuit", "b") { .boolean(false) },
            DBusProperty("CanRaise", "b") { .boolean(false) },
            DBusProperty("HasTrackList", "b") { .boolean(false) },
            DBusProperty("Identity", "s") { [weak self] in .string(await self?.item.identity ?? "MediaRoute") },
            DBusProperty("SupportedUriSchemes", "as") { .array("s", []) },
            DBusProperty("SupportedMimeTypes", "as") { .array("s", []) },
        ])
    }

    nonisolated var playerInterface: DBusInterface {
        let button = { (button: Button) -> @Sendable (DBusMethodCall) async throws(DBusError) -> [DBusValue] in
            { [weak self] _ throws(DBusError) in
                if let action = try await self?.action(for: button) { try await Self.perform(action) }
                return []
            }
        }
        /// A property of the item shown, or its default once the player is gone.
        let shown = { @Sendable [weak self] (read: @Sendable (MPRISItem) -> DBusValue, otherwise: DBusValue) async -> DBusValue in
            guard let self else { return otherwise }
            return read(await self.shown)
        }
        return DBusInterface(Self.playerInterface, methods: [
            DBusMethod("Play", handler: button(.play)),
            DBusMethod("Pause", handler: button(.pause)),
            DBusMethod("PlayPause", handler: button(.playPause)),
            DBusMethod("Stop", handler: button(.stop)),
            DBusMethod("Next", handler: button(.next)),
            DBusMethod("Previous", handler: button(.previous)),
            DBusMethod("Seek", inputs: [DBusArgument("Offset", "x")]) { [weak self] call throws(DBusError) in
                guard let offset = call.arguments.first?.int64 else { throw .invalidArguments("Seek takes an offset in microseconds") }
                guard let self, let seek = try await self.seekAction() else { return [] }
                let now = await self.item
                let target = max(0, now.position(at: .now) + Double(offset) / 1_000_000)
                // Past the end is the next item, as MPRIS has it, for a session that has one.
                if let length = now.length, target > length, let next = try? await self.action(for: .next) {
                    try await Self.perform(next)
                    return []
                }
                try await Self.perform { try await seek(target) }
                await self.sought(to: target)
                return []
            },
            DBusMethod("SetPosition", inputs: [DBusArgument("TrackId", "o"), DBusArgument("Position", "x")]) { [weak self] call throws(DBusError) in
                guard let track = call.arguments.first?.objectPath, let position = call.arguments.last?.int64, position >= 0 else {
                    throw .invalidArguments("SetPosition takes a track id and a position in microseconds, not negative")
                }
                guard let self, let seek = try await self.seekAction() else { return [] }
                // A position meant for another track, or past the end, is ignored, as MPRIS asks.
                let target = Double(position) / 1_000_000
                guard track == (await self.trackID), target <= (await self.item.length ?? 0) else { return [] }
                try await Self.perform { try await seek(target) }
                await self.sought(to: target)
                return []
            },
            DBusMethod("OpenUri", inputs: [DBusArgument("Uri", "s")]) { _ throws(DBusError) in
                throw Self.notSupported("OpenUri: a media session plays what its app or device chose")
            },
        ], properties: [
            DBusProperty("PlaybackStatus", "s") { await shown({ .string($0.status.rawValue) }, .string("Stopped")) },
            DBusProperty("Rate", "d", get: { await shown({ .double($0.rate) }, .double(1)) }, set: { [weak self] value throws(DBusError) in
                guard let rate = value.double, rate.isFinite, rate >= 0 else { throw .invalidArguments("Rate is a number from 0 (pause) up") }
                if let action = try await self?.rateAction(rate) { try await Self.perform(action) }
            }),
            DBusProperty("Metadata", "a{sv}") { [weak self] in
                guard let self else { return .properties([:]) }
                return await self.shown.metadata(track: self.trackID)
            },
            DBusProperty("Volume", "d", get: { await shown({ .double($0.volume ?? 1) }, .double(1)) }, set: { [weak self] value throws(DBusError) in
                guard let level = value.double, level.isFinite else { throw .invalidArguments("Volume is a number") }
                if let action = try await self?.volumeAction(level) { try await Self.perform(action) }
            }),
            DBusProperty("Position", "x") { await shown({ .int64(MPRISItem.microseconds($0.position(at: .now))) }, .int64(0)) },
            DBusProperty("MinimumRate", "d") { [weak self] in .double(await self?.rates.lowerBound ?? 1) },
            DBusProperty("MaximumRate", "d") { [weak self] in .double(await self?.rates.upperBound ?? 1) },
            DBusProperty("CanGoNext", "b") { await shown({ .boolean($0.canGoNext) }, .boolean(false)) },
            DBusProperty("CanGoPrevious", "b") { await shown({ .boolean($0.canGoPrevious) }, .boolean(false)) },
            DBusProperty("CanPlay", "b") { await shown({ .boolean($0.canPlay) }, .boolean(false)) },
            DBusProperty("CanPause", "b") { await shown({ .boolean($0.canPause) }, .boolean(false)) },
            DBusProperty("CanSeek", "b") { await shown({ .boolean($0.canSeek) }, .boolean(false)) },
            DBusProperty("CanControl", "b") { await shown({ .boolean($0.canControl) }, .boolean(false)) },
        ], signals: [DBusSignalDescription("Seeked", arguments: [DBusArgument("Position", "x")])])
    }

    private var rates: ClosedRange<Double> { commands.rates(for: item) }
}
