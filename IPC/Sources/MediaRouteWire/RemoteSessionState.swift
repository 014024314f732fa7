import MediaRouteIPC

/// What a remote media session shows (IPC/README.md §11.6): its playback, its content, the
/// commands it takes and the devices it plays on. The extension sends it whenever its session
/// changes; the supervisor keeps the last one, shows it on the desktop (MPRIS) and lists it.
package struct RemoteSessionState: Codable, Sendable, Equatable {
    package struct Playback: Codable, Sendable, Equatable {
        package enum State: String, Codable, Sendable { case playing, paused, buffering, interrupted, stopped }
        package var state: State
        /// How fast content advances while playing (5 while fast-forwarding); 0 otherwise.
        package var rate: Double
        /// The rate the player returns to after a temporary change.
        package var defaultRate: Double
        /// Seconds into the content at `timestamp`.
        package var elapsed: Double?
        /// When `elapsed` was true, in seconds since 1970: the position is extrapolated from it.
        package var timestamp: Double?

        package init(state: State, rate: Double, defaultRate: Double, elapsed: Double?, timestamp: Double?) {
            (self.state, self.rate, self.defaultRate, self.elapsed, self.timestamp) = (state, rate, defaultRate, elapsed, timestamp)
        }

        /// The position at `now` (seconds since 1970), moving on at the rate while playing.
        package func position(at now: Double) -> Double {
            guard let elapsed else { return 0 }
            guard state == .playing, let timestamp, now > timestamp else { return elapsed }
            return elapsed + (now - timestamp) * rate
        }
    }

    package struct Content: Codable, Sendable, Equatable {
        package var id: String
        package var title: String?
        package var artist: String?
        package var album: String?
        /// Seconds; nil for content without an end (a live stream).
        package var duration: Double?
        /// The artwork's id: the supervisor asks the extension for it (`remote.artwork`) once per id.
        package var artwork: String?
        package var isExplicit: Bool
        /// `audio` or `video`.
        package var kind: String

        package init(id: String, title: String?, artist: String?, album: String?, duration: Double?, artwork: String?, isExplicit: Bool, kind: String) {
            (self.id, self.title, self.artist, self.album, self.duration, self.artwork, self.isExplicit, self.kind) =
                (id, title, artist, album, duration, artwork, isExplicit, kind)
        }
    }

    package struct Device: Codable, Sendable, Equatable {
        package enum Volume: String, Codable, Sendable { case absolute, relative }
        package var id: String
        package var name: String
        package var type: String
        /// How its volume is set, if it can be.
        package var volumeControl: Volume?
        /// 0…1, for an absolute volume.
        package var volume: Double?

        package init(id: String, name: String, type: String, volumeControl: Volume?, volume: Double?) {
            (self.id, self.name, self.type, self.volumeControl, self.volume) = (id, name, type, volumeControl, volume)
        }
    }

    package var playback: Playback?
    package var content: Content?
    /// The commands enabled.
    package var commands: [RemoteCommandName]
    package var devices: [Device]

    package init(playback: Playback?, content: Content?, commands: [RemoteCommandName], devices: [Device]) {
        (self.playback, self.content, self.commands, self.devices) = (playback, content, commands, devices)
    }

    package func enables(_ command: RemoteCommandName) -> Bool { commands.contains(command) }

    /// The most devices a session may name, and the longest text of any member, in bytes: what a
    /// supervisor keeps of an extension is bounded whatever it sends.
    package static let maximumDevices = 32
    package static let maximumText = 1024

    /// Why this state cannot be taken, if it cannot: too many devices or too long a text.
    package var problem: String? {
        if devices.count > Self.maximumDevices { return "a remote session names \(devices.count) devices, more than \(Self.maximumDevices)" }
        let texts = [content?.id, content?.title, content?.artist, content?.album, content?.artwork, content?.kind].compactMap { $0 }
            + devices.flatMap { [$0.id, $0.name, $0.type] }
        if let long = texts.first(where: { $0.utf8.count > Self.maximumText }) {
            return "a remote session's state has a text of \(long.utf8.count) bytes, more than \(Self.maximumText)"
        }
        return nil
    }
}

/// A command a remote session may take, as the wire names it.
package enum RemoteCommandName: String, Codable, Sendable, CaseIterable {
    case play, pause, togglePlayPause, stop, next, previous, seekToPosition
}
