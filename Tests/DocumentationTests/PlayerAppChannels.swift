import AVSystemRouting
import Foundation

// Data channels, route changes and real-time streams for "Routing media from an app".

extension Player: AVSystemRouteDataDelegate {
    func dataChannel(_ channel: AVSystemRouteDataChannel, didReceive data: Data) {
        print("the device says", String(decoding: data, as: UTF8.self))
    }

    func greet(_ route: AVSystemRoute) async throws {
        try await route.routeDataChannel.send(Data("hello".utf8))
    }

    func watchRouteChanges() async {
        for await change in AVSystemRouteController.shared.routeChanges() {
            if change.reason == .oldDeviceUnavailable, change.previousRoute.outputs.contains(where: \.portType.isPrivate) {
                print("the headphones went away; playback there is paused")
            }
            print(change.message)
        }
    }

    func playTone(on route: AVSystemRoute) async throws {
        let stream = try await route.startAudioStream()
        let frames = 960  // 20 ms at 48 kHz
        var samples = [Float](repeating: 0, count: frames * 2)
        for frame in 0..<frames {
            let value = Float(sin(2 * Double.pi * 440 * Double(frame) / 48_000)) * 0.2
            samples[2 * frame] = value
            samples[2 * frame + 1] = value
        }
        for _ in 0..<50 {
            let written = try samples.withUnsafeBufferPointer { try stream.write($0) }
            if !written { print("the ring was full: 20 ms dropped") }
            try await Task.sleep(for: .milliseconds(20))
        }
        try await stream.stop()
    }

    func followButtons(on route: AVSystemRoute) async {
        for await command in route.remoteCommands() {
            print("the device's", command, "button")
        }
    }
}
