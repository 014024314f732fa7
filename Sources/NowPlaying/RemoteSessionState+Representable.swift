import Foundation
import MediaRouteWire

extension RemoteSessionState {
    /// What a representable shows, in the wire's terms (read under observation: every property
    /// read here is watched).
    @MainActor
    init(of session: some RemoteMediaSessionRepresentable) {
        self.init(playback: session.playbackSnapshot.map(Playback.init), content: session.content.map(Content.init),
                  commands: session.commands.filter(\.isEnabled).map(\.name), devices: session.devices.map(Device.init))
    }
}

extension RemoteSessionState.Playback {
    init(_ snapshot: MediaPlaybackSnapshot) {
        // Rates that cannot be (not finite; 0 while playing; a default of 0 or less) are shown
        // as the default rate, or 1.
        let given = snapshot.defaultPlaybackRate
        let defaultRate = given.isFinite && given > 0 ? Double(decimal: given) : 1
        let state: State, rate: Double
        switch snapshot.state {
        case .playing(let playing): (state, rate) = (.playing, playing.isFinite && playing != 0 ? Double(decimal: playing) : defaultRate)
        case .paused: (state, rate) = (.paused, 0)
        case .buffering: (state, rate) = (.buffering, 0)
        case .interrupted: (state, rate) = (.interrupted, 0)
        case .stopped: (state, rate) = (.stopped, 0)
        }
        self.init(state: state, rate: rate, defaultRate: defaultRate, elapsed: snapshot.elapsedTime, timestamp: snapshot.timestamp?.timeIntervalSince1970)
    }
}

extension RemoteSessionState.Content {
    init(_ content: any MediaContentRepresentable) {
        let music = content as? MusicContent
        var seconds: Double?
        if case .finite(let length)? = content.duration { seconds = length }
        self.init(id: content.id, title: music?.songTitle, artist: music?.artistName, album: music?.albumName, duration: seconds,
                  artwork: content.artwork?.id, isExplicit: content.isExplicit ?? false, kind: content.type == .video ? "video" : "audio")
    }
}

extension RemoteSessionState.Device {
    init(_ device: MediaDevice) {
        var control: Volume?, level: Double?
        for capability in device.capabilities {
            switch capability.shown {
            case .absolute(let now): (control, level) = (.absolute, Double(decimal: now))
            case .relative: control = control ?? .relative
            }
        }
        self.init(id: device.id, name: device.name, type: device.type.rawValue, volumeControl: control, volume: level)
    }
}

extension Double {
    /// A Float as the decimal it was written as (0.65 stays 0.65, not 0.6499999761581421).
    init(decimal value: Float) { self = Double("\(value)") ?? Double(value) }
}
