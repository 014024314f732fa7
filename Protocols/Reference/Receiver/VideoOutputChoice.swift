import Foundation

/// Where a receiver shows real-time video (`--video-output`): a window of its own on the session's
/// display, or nowhere (`none`: the stream is still reassembled, and recorded with `--record`).
enum VideoOutputChoice: String, CaseIterable, Sendable {
    case auto, window, none

    /// What the choice comes to on this session: `auto` is a window when there is a display (and
    /// ffplay to show it), else none; `window` without a display or ffplay is an error naming
    /// what is missing. Returns the choice and, for `auto` come to none, why.
    func resolved(environment: [String: String] = ProcessInfo.processInfo.environment,
                  ffplay: String?) throws(ReceiverError) -> (choice: VideoOutputChoice, reason: String?) {
        switch self {
        case .none:
            return (.none, nil)
        case .window:
            if let (what, why) = Self.missing(environment: environment, ffplay: ffplay) {
                throw ReceiverError("--video-output window needs \(what): \(why); run it in a desktop session, or use --video-output none")
            }
            return (.window, nil)
        case .auto:
            if let (_, why) = Self.missing(environment: environment, ffplay: ffplay) { return (.none, why) }
            return (.window, nil)
        }
    }

    /// What a window lacks here, and why it is missing.
    private static func missing(environment: [String: String], ffplay: String?) -> (what: String, why: String)? {
        // An empty DISPLAY is no display (that is how a parent hides its own).
        guard ["DISPLAY", "WAYLAND_DISPLAY"].contains(where: { !(environment[$0] ?? "").isEmpty }) else {
            return ("a display", "neither DISPLAY nor WAYLAND_DISPLAY is set")
        }
        guard ffplay != nil else { return ("ffplay", "ffplay, which draws the window, is not on PATH (apt-get install ffmpeg)") }
        return nil
    }
}
