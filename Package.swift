// swift-tools-version: 6.2
import PackageDescription

/// Every C library comes in as a system-library target found by pkg-config, with the Debian package
/// that provides it, so `swift build` names the exact `apt-get install` when one is missing.
func systemLibrary(_ name: String, pkgConfig: String, apt: [String]) -> Target {
    .systemLibrary(name: name, pkgConfig: pkgConfig, providers: [.apt(apt)])
}

let package = Package(
    name: "MediaRoute",
    products: [
        .library(name: "MediaRouteIPC", targets: ["MediaRouteIPC"]),
        .library(name: "MediaDevice", targets: ["MediaDevice"]),
        .library(name: "AVSystemRouting", targets: ["AVSystemRouting"]),
        .library(name: "NowPlaying", targets: ["NowPlaying"]),
        .executable(name: "mediarouted", targets: ["mediarouted"]),
        .executable(name: "mediaroute", targets: ["mediaroute"]),
        .executable(name: "mediaroute-player", targets: ["mediaroute-player"]),
        .executable(name: "mediaroute-receiver", targets: ["mediaroute-receiver"]),
        .executable(name: "mediaroute-reference-driver", targets: ["mediaroute-reference-driver"]),
        .executable(name: "mediaroute-bluetooth-driver", targets: ["mediaroute-bluetooth-driver"]),
        .executable(name: "mediaroute-dlna-driver", targets: ["mediaroute-dlna-driver"]),
        .executable(name: "mediaroute-airplay-driver", targets: ["mediaroute-airplay-driver"]),
        .library(name: "DBus", targets: ["DBus"]),
        .executable(name: "mediaroute-demo", targets: ["mediaroute-demo"]),
        .executable(name: "mediaroute-bench", targets: ["mediaroute-bench"]),
        .executable(name: "mediaroute-conformance", targets: ["mediaroute-conformance"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-atomics", from: "1.3.0"),
        // HTTP for UPnP/DLNA (SOAP, GENA, the media server): NIOHTTP1's parser and encoders.
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        // mediarouted's configuration file: YAML over libyaml, whose every node carries its line and column.
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        // `swift package generate-documentation` (make docs): a command plugin, built only when run.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // C: what Swift cannot import from the system headers (CMSG_* macros, packed epoll_event).
        .target(name: "CLinuxHelpers"),
        systemLibrary("CAvahi", pkgConfig: "avahi-client", apt: ["libavahi-client-dev"]),
        systemLibrary("CDBus", pkgConfig: "dbus-1", apt: ["libdbus-1-dev"]),
        systemLibrary("CBlueZ", pkgConfig: "bluez", apt: ["libbluetooth-dev"]),
        systemLibrary("COpus", pkgConfig: "opus", apt: ["libopus-dev"]),
        systemLibrary("CX264", pkgConfig: "x264", apt: ["libx264-dev"]),
        // libxcb with MIT-SHM: the X11 screen grabbed into shared memory, for screen mirroring; and libXau
        // (which libxcb1-dev brings), for the tests' painter to read Xwayland's Xauthority cookie.
        systemLibrary("CXCB", pkgConfig: "xcb-shm", apt: ["libxcb-shm0-dev"]),
        // libpipewire: a Wayland screen's ScreenCast stream, for screen mirroring, and the receiver's
        // sound on a PipeWire server; with the C parts of the stream consumer and of the playback
        // stream (SPA pods and the streams' event tables, which Swift cannot build).
        systemLibrary("CPipeWire", pkgConfig: "libpipewire-0.3", apt: ["libpipewire-0.3-dev"]),
        .target(name: "CPipeWireStream", dependencies: ["CPipeWire"]),
        .target(name: "CPipeWirePlayback", dependencies: ["CPipeWire"]),
        systemLibrary("CSBC", pkgConfig: "sbc", apt: ["libsbc-dev"]),
        systemLibrary("CSoxr", pkgConfig: "soxr", apt: ["libsoxr-dev"]),
        systemLibrary("CLibXML2", pkgConfig: "libxml-2.0", apt: ["libxml2-dev"]),
        // OpenSSL's libcrypto: AirPlay 1's RSA-OAEP, AES-128-CBC and Digest MD5, and the C baseline of raop-stream.
        systemLibrary("COpenSSL", pkgConfig: "libcrypto", apt: ["libssl-dev"]),
        // ALSA's libasound: the receiver's sound output, to a card or to PulseAudio's and PipeWire's ALSA devices.
        systemLibrary("CALSA", pkgConfig: "alsa", apt: ["libasound2-dev"]),

        // The wire protocol: framing, JSON-RPC messages, handshake, fd passing, event loop.
        .target(
            name: "MediaRouteIPC",
            dependencies: [
                "CLinuxHelpers",
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "HeapModule", package: "swift-collections"),
                .product(name: "Atomics", package: "swift-atomics"),
            ],
            path: "IPC/Sources/MediaRouteIPC"
        ),

        // The typed wire: one type per message of IPC/README.md §11, and the values they carry
        // (devices, device errors, playback state), encoded and decoded in one place.
        .target(name: "MediaRouteWire", dependencies: ["MediaRouteIPC"], path: "IPC/Sources/MediaRouteWire"),

        // Private D-Bus buses and Avahi daemons (in network namespaces of their own), for the demo
        // on a machine without Avahi, and for the tests: started and stopped by PID. Also a private
        // PulseAudio, a bad UDP network (JitterRelay) with a playout path over it, for the sound
        // tests and benchmarks, and a private X server (Xvfb) for the mirroring tests.
        .target(name: "PrivateDaemons", dependencies: ["MediaRouteIPC", "DBus", "CLinuxHelpers", "CXCB", "MediaCodecs", "RTP", "SoundOutput"]),

        // Opus, H.264, SBC and resampling, wrapped once for every driver and receiver that codes media.
        .target(name: "MediaCodecs", dependencies: ["COpus", "CX264", "CSBC", "CSoxr", "RTP"]),
        // Screen capture (an X11 screen through MIT-SHM, scaled to I420) and screen mirroring on a
        // route, for apps (AVSystemRoute.startScreenMirroring) and the CLI (`mediaroute mirror`).
        .target(name: "ScreenCapture", dependencies: ["CXCB", "CPipeWireStream", "DBus"]),
        .target(name: "ScreenMirroring", dependencies: ["ScreenCapture", "AVSystemRouting", "MediaRouteIPC"]),

        // Sound output: a kept ALSA playback device (a card, or PulseAudio's ALSA device), a PipeWire
        // stream, or the null output paced like a card; and which of them `--audio-output` means here.
        .target(name: "SoundOutput", dependencies: ["CALSA", "CPipeWirePlayback"]),

        // D-Bus over libdbus, on our event loop: calls, signals, exported objects. BlueZ, MPRIS and
        // NowPlaying go through it.
        .target(name: "DBus", dependencies: ["CDBus", "MediaRouteIPC"]),

        // What every driver of sample-only devices (Bluetooth, AirPlay 1) shares: PCM pulled from an
        // app's sample ring or from a URL played here, in the device's format.
        .target(name: "PCMPlayback", dependencies: ["MediaDevice", "MediaCodecs", "MediaRouteIPC", "CLinuxHelpers"]),

        // The connections a SwiftNIO server has open, bounded and closed with it (DLNA, DACP, pushes).
        .target(name: "OpenChannels", dependencies: [.product(name: "NIOCore", package: "swift-nio")]),

        // RTP (RFC 3550) with the Opus (RFC 7587) and H.264 (RFC 6184) payload formats.
        .target(name: "RTP"),

        // DNS-SD over Avahi: browsing, resolving and publishing services, surviving daemon restarts.
        .target(name: "AvahiDiscovery", dependencies: ["CAvahi"]),

        // The driver SDK: a protocol driver is one @main type conforming to MediaDeviceExtension.
        .target(name: "MediaDevice", dependencies: ["MediaRouteWire", "MediaRouteIPC", "CLinuxHelpers"]),

        // The app library: routes, sessions, playback control, data channels, route changes.
        .target(name: "AVSystemRouting", dependencies: ["MediaDevice", "MediaRouteWire", "MediaRouteIPC"]),

        // The remote-sessions library: apps start, update and end sessions; extensions make them.
        .target(name: "NowPlaying", dependencies: ["AVSystemRouting", "MediaRouteWire", "MediaRouteIPC", "CLinuxHelpers"]),

        // The supervisor as a library (testable in-process), and its thin executable.
        .target(
            name: "MediaRouteSupervisor",
            dependencies: ["MediaDevice", "MediaRouteIPC", "CLinuxHelpers", "DBus", "OpenChannels", .product(name: "Logging", package: "swift-log"),
                           // The push endpoint: HTTP/1.1 on NIO.
                           .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                           .product(name: "NIOHTTP1", package: "swift-nio")]
        ),

        // mediarouted's configuration: the file (YAML), where it is looked for, flags over it, reloads.
        .target(
            name: "MediaRouteConfiguration",
            dependencies: ["MediaRouteSupervisor", "MediaRouteIPC", "MediaDevice", .product(name: "Yams", package: "Yams"),
                           .product(name: "Logging", package: "swift-log")]
        ),
        .executableTarget(
            name: "mediarouted",
            dependencies: ["MediaRouteSupervisor", "MediaRouteConfiguration", "MediaRouteIPC", .product(name: "ArgumentParser", package: "swift-argument-parser"),
                           .product(name: "Logging", package: "swift-log")],
            // Its systemd units and the commented default configuration (/etc/mediaroute/mediarouted.yaml), which `make install` installs.
            exclude: ["systemd", "mediarouted.yaml"]
        ),
        // The operator CLI.
        .executableTarget(
            name: "mediaroute",
            dependencies: ["MediaRouteIPC", "MediaRouteWire", "MediaDevice", "MediaCodecs", "ScreenCapture", .product(name: "ArgumentParser", package: "swift-argument-parser"),
                           // `doctor`: browsing through Avahi and searching SSDP as the drivers do.
                           "AvahiDiscovery", "UPnP", .product(name: "NIOHTTP1", package: "swift-nio")]
        ),

        // The reference protocol (Protocols/Reference/PROTOCOL.md): its shared definitions, its
        // receiver (a real network media device), and its driver.
        .target(name: "ReferenceProtocol", dependencies: ["MediaDevice", "MediaRouteWire", "MediaRouteIPC"], path: "Protocols/Reference/Common"),
        .executableTarget(
            name: "mediaroute-receiver",
            dependencies: ["ReferenceProtocol", "AvahiDiscovery", "MediaRouteIPC", "MediaDevice", "MediaCodecs", "RTP", "CLinuxHelpers", "SoundOutput",
                           .product(name: "ArgumentParser", package: "swift-argument-parser")],
            path: "Protocols/Reference/Receiver"
        ),
        .executableTarget(
            name: "mediaroute-reference-driver",
            dependencies: ["ReferenceProtocol", "AvahiDiscovery", "MediaDevice", "MediaRouteIPC", "MediaCodecs"],
            path: "Protocols/Reference/Driver"
        ),

        // Bluetooth: A2DP media packets (SBC) on a BlueZ transport, and the driver on BlueZ's D-Bus API.
        .target(name: "A2DP", dependencies: ["PCMPlayback", "MediaCodecs", "MediaRouteIPC"], path: "Protocols/Bluetooth/A2DP"),
        .executableTarget(
            name: "mediaroute-bluetooth-driver",
            dependencies: ["A2DP", "DBus", "PCMPlayback", "MediaDevice", "MediaRouteIPC", "CLinuxHelpers"],
            path: "Protocols/Bluetooth/Driver"
        ),

        // UPnP/DLNA: SSDP, device descriptions, SOAP control, GENA events and the HTTP media server
        // (on SwiftNIO), and the driver for MediaRenderers.
        .target(
            name: "UPnP",
            dependencies: ["MediaRouteIPC", "PCMPlayback", "CLibXML2", "OpenChannels", .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                           .product(name: "NIOHTTP1", package: "swift-nio")],
            path: "Protocols/DLNA/UPnP"
        ),
        .executableTarget(
            name: "mediaroute-dlna-driver",
            dependencies: ["UPnP", "PCMPlayback", "MediaDevice", "MediaRouteIPC", .product(name: "NIOHTTP1", package: "swift-nio")],
            path: "Protocols/DLNA/Driver"
        ),

        // AirPlay 1 (RAOP): the RTSP session, ALAC framing, RTP audio with its control and timing
        // channels, encryption and Digest authentication: the sender a driver streams to receivers with.
        .target(
            name: "RAOP",
            dependencies: ["COpenSSL", "PCMPlayback", .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio")],
            path: "Protocols/AirPlay/RAOP"
        ),
        .executableTarget(
            name: "mediaroute-airplay-driver",
            dependencies: ["RAOP", "DACP", "AvahiDiscovery", "PCMPlayback", "MediaDevice", "MediaRouteIPC"],
            path: "Protocols/AirPlay/Driver"
        ),

        // DACP: the receiver's own remote control reaching the sender (play/pause/next/volume), an
        // HTTP server published as iTunes_Ctrl_<DACP-ID> in _dacp._tcp.
        .target(
            name: "DACP",
            dependencies: ["AvahiDiscovery", "OpenChannels", .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                           .product(name: "NIOHTTP1", package: "swift-nio")],
            path: "Protocols/AirPlay/DACP"
        ),

        // The example app: plays on a route through AVSystemRouting alone.
        .executableTarget(
            name: "mediaroute-player",
            dependencies: ["AVSystemRouting", "MediaDevice", "CLinuxHelpers", .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),

        // The demo: the README's first command.
        .executableTarget(
            name: "mediaroute-demo",
            dependencies: ["PrivateDaemons", "MediaRouteIPC", "ReferenceProtocol", "CLinuxHelpers", .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),

        // The conformance kit: plays the supervisor toward any driver (in any language) and checks it
        // against IPC/README.md, with faults injected from the supervisor's side.
        .executableTarget(
            name: "mediaroute-conformance",
            dependencies: ["MediaRouteSupervisor", "MediaRouteWire", "MediaRouteIPC", .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),

        // Benchmarks: each compares against a raw C baseline measured in the same run.
        .target(name: "CBenchBaseline", dependencies: ["COpus", "CSBC", "COpenSSL"]),
        .executableTarget(name: "mediaroute-bench-peer"),
        .executableTarget(
            name: "mediaroute-bench",
            dependencies: [
                "MediaRouteIPC", "MediaRouteWire", "CBenchBaseline", "A2DP", "PCMPlayback", "DBus", "CLinuxHelpers", "MediaRouteSupervisor", "MediaDevice", "PrivateDaemons", "ReferenceProtocol", "MediaCodecs",
                "AVSystemRouting", "RAOP", "CDBus", "ScreenMirroring",
                // Not linked: built beside the bench, which runs it as nowplaying-latency's extension.
                "mediaroute-test-remote-extension",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),

        .testTarget(name: "MediaRouteIPCTests", dependencies: ["MediaRouteIPC", "MediaRouteWire", "TestSupport"]),
        // Real peers for tests (private dbus-daemon, ...), started and stopped by PID.
        .target(name: "TestSupport", dependencies: ["MediaRouteIPC", "MediaRouteSupervisor", "AVSystemRouting", "PrivateDaemons", .product(name: "Logging", package: "swift-log")],
                path: "Tests/TestSupport"),
        // A driver that crashes, hangs, floods, sends garbage or lies on command, for the crash-isolation tests.
        .executableTarget(name: "mediaroute-testdriver", dependencies: ["MediaDevice"], path: "Tests/TestDriver"),
        // A NowPlaying extension whose "device" is a log file, for the remote-session tests and benchmark.
        .executableTarget(name: "mediaroute-test-remote-extension", dependencies: ["NowPlaying"], path: "Tests/TestRemoteExtension"),
        .testTarget(name: "MediaRouteSupervisorTests",
                    dependencies: ["MediaRouteSupervisor", "MediaDevice", "DBus", "PrivateDaemons", "TestSupport", "mediaroute-testdriver", "mediarouted", "mediaroute"]),
        .testTarget(name: "MediaRouteConfigurationTests",
                    dependencies: ["MediaRouteConfiguration", "MediaRouteSupervisor", "MediaRouteIPC", "TestSupport", "mediaroute-testdriver", "mediarouted",
                                   "mediaroute", .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "AVSystemRoutingTests",
                    dependencies: ["AVSystemRouting", "MediaRouteSupervisor", "MediaDevice", "PrivateDaemons", "TestSupport", "mediaroute-testdriver", "mediarouted",
                                   "mediaroute", "mediaroute-player"]),
        .testTarget(name: "ReferenceProtocolTests",
                    dependencies: ["ReferenceProtocol", "AVSystemRouting", "MediaRouteSupervisor", "MediaDevice", "MediaRouteIPC", "PrivateDaemons", "MediaCodecs",
                                   "TestSupport", "mediaroute-receiver", "mediaroute-reference-driver", "mediaroute-demo", "mediaroute-player", "mediaroute",
                                   "ScreenMirroring"]),
        .testTarget(name: "NowPlayingTests",
                    dependencies: ["NowPlaying", "AVSystemRouting", "MediaDevice", "MediaRouteSupervisor", "MediaRouteIPC", "TestSupport",
                                   "MediaRouteWire", "PrivateDaemons", "mediaroute-test-remote-extension", "mediarouted", "mediaroute"]),
        .testTarget(name: "MediaDeviceTests", dependencies: ["MediaDevice", "MediaRouteIPC", "MediaRouteWire"]),
        // The DocC articles' code (Sources/*/*.docc), compiled, and checked to be what the articles show.
        .testTarget(name: "DocumentationTests", dependencies: ["MediaDevice", "AVSystemRouting", "NowPlaying"]),
        .testTarget(name: "MediaCodecsTests", dependencies: ["MediaCodecs", "RTP", "PrivateDaemons", "TestSupport"]),
        .testTarget(name: "SoundOutputTests", dependencies: ["SoundOutput", "TestSupport"]),
        .testTarget(name: "CAvahiTests", dependencies: ["CAvahi", "PrivateDaemons"]),
        .testTarget(name: "CDBusTests", dependencies: ["CDBus", "PrivateDaemons"]),
        .testTarget(name: "CBlueZTests", dependencies: ["CBlueZ"]),
        .testTarget(name: "DBusTests", dependencies: ["DBus", "MediaRouteIPC", "PrivateDaemons"]),
        .testTarget(name: "PCMPlaybackTests", dependencies: ["PCMPlayback", "A2DP", "MediaCodecs", "MediaRouteIPC", "PrivateDaemons", "TestSupport"]),
        .testTarget(name: "BluetoothTests",
                    dependencies: ["DBus", "A2DP", "MediaCodecs", "AVSystemRouting", "MediaRouteSupervisor", "MediaDevice", "MediaRouteIPC", "PrivateDaemons",
                                   "TestSupport", "mediaroute-bluetooth-driver", "mediarouted", "mediaroute"]),
        .testTarget(name: "DLNATests",
                    dependencies: ["UPnP", "AVSystemRouting", "MediaRouteSupervisor", "MediaDevice", "MediaRouteIPC", "PrivateDaemons", "TestSupport",
                                   "mediaroute-dlna-driver", "mediarouted", "mediaroute", .product(name: "NIOCore", package: "swift-nio"),
                                   .product(name: "NIOHTTP1", package: "swift-nio")]),
        .testTarget(name: "AirPlayTests", dependencies: ["MediaRouteSupervisor", "MediaDevice", "MediaRouteIPC", "MediaRouteWire", "PrivateDaemons", "TestSupport", "DBus",
                                                       "mediaroute-airplay-driver"]),
        .testTarget(name: "RAOPTests", dependencies: ["RAOP", "COpenSSL", "PCMPlayback", "PrivateDaemons", "TestSupport", .product(name: "NIOCore", package: "swift-nio"),
                                                    .product(name: "NIOPosix", package: "swift-nio")]),
        .testTarget(name: "DACPTests", dependencies: ["DACP", "RAOP", "AvahiDiscovery", "DBus", "PrivateDaemons", "TestSupport",
                                                    .product(name: "NIOCore", package: "swift-nio")]),
        // `mediaroute doctor` against staged faults: Avahi stopped, a driver failed, no multicast, a drop rule, a device its driver refuses.
        .testTarget(name: "DoctorTests", dependencies: ["MediaRouteIPC", "PrivateDaemons", "TestSupport", "mediaroute-testdriver", "mediaroute-airplay-driver",
                                                      "mediarouted", "mediaroute"]),
        // The conformance kit run on every driver: the test driver, the Python example, Protocols/ (with real receivers for the reference).
        .testTarget(name: "ConformanceTests",
                    dependencies: ["MediaRouteIPC", "PrivateDaemons", "TestSupport", "mediaroute-conformance", "mediaroute-testdriver", "mediaroute-receiver",
                                   "mediaroute-reference-driver", "mediaroute-dlna-driver", "mediaroute-bluetooth-driver", "mediaroute-airplay-driver"]),
        .testTarget(name: "COpusTests", dependencies: ["COpus", "MediaRouteIPC"]),
        .testTarget(name: "CX264Tests", dependencies: ["CX264"]),
        // Screen capture on a private Xvfb, with a picture the test paints through its own X client.
        .testTarget(name: "ScreenCaptureTests", dependencies: ["ScreenCapture", "PrivateDaemons", "DBus", "mediaroute"]),
    ],
    swiftLanguageModes: [.v6]
)

// Plugins for driver authors (README, "Writing a driver"): `swift package new-driver` scaffolds a
// driver, its manifest and its test; DriverIdentityPlugin checks on every build of a driver that the
// three names of its protocol agree, with `swift package check-driver-identity` doing it on demand.
package.products += [
    .plugin(name: "NewDriver", targets: ["NewDriver"]),
    .plugin(name: "DriverIdentityPlugin", targets: ["DriverIdentityPlugin"]),
    .plugin(name: "CheckDriverIdentity", targets: ["CheckDriverIdentity"]),
]
package.targets += [
    // The identity check the two identity plugins run: standard library and Foundation only.
    .executableTarget(name: "mediaroute-identity-check"),
    .plugin(name: "NewDriver",
            capability: .command(intent: .custom(verb: "new-driver", description: "Scaffold a driver: its @main type, manifest and test under the supervisor"),
                                 permissions: [.writeToPackageDirectory(reason: "new-driver writes Protocols/<Name>/ and Tests/<Name>DriverTests/")])),
    .plugin(name: "DriverIdentityPlugin", capability: .buildTool(), dependencies: ["mediaroute-identity-check"]),
    .plugin(name: "CheckDriverIdentity",
            capability: .command(intent: .custom(verb: "check-driver-identity", description: "Check that every driver's manifest and protocolType name its protocol alike")),
            dependencies: ["mediaroute-identity-check"]),
    // The plugins on scratch packages, and the identity check on mismatched drivers.
    .testTarget(name: "DriverPluginsTests", dependencies: ["TestSupport", "mediaroute-identity-check", "mediarouted", "mediaroute"]),
]
// Every driver in Protocols/ has its identity checked on each build that changes it.
for target in package.targets where target.type == .executable && (target.path ?? "").hasPrefix("Protocols/") && (target.plugins ?? []).isEmpty {
    target.plugins = [.plugin(name: "DriverIdentityPlugin")]
}
// The daemon as a service: make install and uninstall, the systemd units (systemd-analyze verify),
// sd_notify and the watchdog against a notify socket of the test's own, logs for journald.
package.targets += [
    .testTarget(name: "ServiceTests",
                dependencies: ["MediaRouteSupervisor", "MediaRouteIPC", "CLinuxHelpers", "PrivateDaemons", "TestSupport", .product(name: "Logging", package: "swift-log"),
                               "mediarouted", "mediaroute", "mediaroute-testdriver", "mediaroute-reference-driver", "mediaroute-bluetooth-driver",
                               "mediaroute-dlna-driver", "mediaroute-airplay-driver"]),
]
