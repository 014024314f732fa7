import Foundation
import MediaDevice

// The playback a LampDriver session hands to started(application:playbackControl:session:).

@MainActor
final class LampPlayback: AVInterfaceControllable {
    let url: URL
    var isPlaying = true {
        didSet { /* send play or pause to the lamp */ }
    }
    var state: AVInterfacePlaybackState { isPlaying ? .playing : .paused }
    var currentPlaybackPosition = 0.0 {
        didSet { /* seek on the lamp */ }
    }
    var playbackSpeed: Float = 1
    var timeRange: ClosedRange<Double>?
    var volume: Float = 1
    var isMuted = false
    let audioOptions: [String] = []
    var selectedAudioOption: String?
    let subtitleOptions: [String] = []
    var selectedSubtitleOption: String?
    var metadata: AVInterfaceMetadata

    init(url: URL) {
        self.url = url
        metadata = AVInterfaceMetadata(title: url.lastPathComponent)
    }
}
