import Foundation

/// PipeWire's and WirePlumber's configuration for a test's own graph, which must never touch the
/// machine: pipewire's whole configuration (nothing of the machine's is read), and wireplumber's
/// stock scripts with its components and the script that enables things replaced, so that no ALSA,
/// V4L2 or libcamera monitor, no Bluetooth and no portal access runs; both daemons' bus addresses
/// name a socket nobody listens on, so they never reach the machine's buses nor start one. As on a
/// desktop, the server loads module-rt: its graph runs at real-time priority where it may (as root
/// here), so that a busy machine does not make it late for a period, a gap in what is recorded.
struct IsolatedPipeWireConfiguration {
    /// Holds `pipewire/pipewire.conf` and `wireplumber/`: what `XDG_CONFIG_HOME` names for wireplumber.
    let directory: String
    /// A null sink (`support.null-audio-sink`, 48 kHz stereo) of this name in the graph, or none.
    let nullSink: String?

    /// The folders the daemons need under `directory`; made by `write`.
    private var folders: [String] { [directory + "/pipewire", directory + "/wireplumber/main.lua.d"] }

    /// Writes the files (making the folders).
    func write() throws {
        for folder in folders { try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true) }
        let sink = nullSink.map { name in
            """
            { factory = adapter args = {
                factory.name = support.null-audio-sink node.name = \(name) node.description = "MediaRoute test sink"
                media.class = Audio/Sink audio.rate = 48000 audio.channels = 2 audio.position = [ FL FR ] object.linger = true } }
            """
        } ?? ""
        try """
        context.properties = { core.daemon = true core.name = pipewire-0 default.clock.rate = 48000 }
        context.spa-libs = { audio.convert.* = audioconvert/libspa-audioconvert support.* = support/libspa-support }
        context.modules = [
            { name = libpipewire-module-rt flags = [ ifexists nofail ] }
            { name = libpipewire-module-protocol-native } { name = libpipewire-module-metadata }
            { name = libpipewire-module-spa-node-factory } { name = libpipewire-module-client-node }
            { name = libpipewire-module-access } { name = libpipewire-module-adapter }
            { name = libpipewire-module-link-factory } { name = libpipewire-module-session-manager }
        ]
        context.objects = [
            { factory = spa-node-factory args = { factory.name = support.node.driver node.name = Dummy-Driver node.group = pipewire.dummy priority.driver = 20000 } }
            \(sink)
        ]
        """.write(toFile: directory + "/pipewire/pipewire.conf", atomically: true, encoding: .utf8)
        try """
        context.properties = { log.level = 2 wireplumber.script-engine = lua-scripting }
        context.spa-libs = { audio.convert.* = audioconvert/libspa-audioconvert support.* = support/libspa-support }
        context.modules = [
            { name = libpipewire-module-protocol-native } { name = libpipewire-module-client-node }
            { name = libpipewire-module-adapter } { name = libpipewire-module-metadata } { name = libpipewire-module-session-manager }
        ]
        wireplumber.components = [
            { name = libwireplumber-module-lua-scripting, type = module }
            { name = main.lua, type = config/lua } { name = policy.lua, type = config/lua }
        ]
        """.write(toFile: directory + "/wireplumber/wireplumber.conf", atomically: true, encoding: .utf8)
        try """
        -- In place of the stock 90-enable-all.lua: no ALSA, V4L2 or libcamera monitor, no portal.
        default_access.properties["enable-flatpak-portal"] = false
        load_module("metadata")
        default_access.enable()
        device_defaults.enable()
        stream_defaults.enable()
        """.write(toFile: directory + "/wireplumber/main.lua.d/90-enable-all.lua", atomically: true, encoding: .utf8)
    }

    /// What wireplumber's environment needs over the clients' (runtime directory, home): this
    /// configuration, and both bus addresses at `deadSocket` (a path nothing listens on).
    func sessionManagerEnvironment(deadSocket: String) -> [String: String] {
        let noBus = "unix:path=\(deadSocket)"
        return ["XDG_CONFIG_HOME": directory, "DBUS_SESSION_BUS_ADDRESS": noBus, "DBUS_SYSTEM_BUS_ADDRESS": noBus]
    }

    /// pipewire's: wireplumber's, and its own configuration directory.
    func serverEnvironment(deadSocket: String) -> [String: String] {
        sessionManagerEnvironment(deadSocket: deadSocket).merging(["PIPEWIRE_CONFIG_DIR": directory + "/pipewire"]) { _, new in new }
    }
}
