import Foundation
import MediaRouteIPC
import MediaRouteWire

/// The active routes as they must come back after a restart of the daemon, even `kill -9`, in
/// `routes.json` of the state directory, written atomically as `state.json` is. Written when a
/// route or its session changes (at most once a second), and while something plays only as its
/// position moves on, at most once every `positionInterval`: a restart finds a position at most
/// that old.
final class SavedRoutes {
    static let positionInterval: Duration = .seconds(5)
    /// More routes than this are not kept (the first ones are).
    static let limit = 64
    let path: String
    let pacing = WritePacing(interval: .seconds(1))
    /// What the file holds.
    private(set) var written: [SavedRoute] = []

    init(stateDirectory: String) { path = (stateDirectory as NSString).appendingPathComponent("routes.json") }

    /// The routes saved by the daemon before this one; a damaged file is named, set aside, and brings nothing back.
    func load() -> (routes: [SavedRoute], problem: String?) {
        guard let data = FileManager.default.contents(atPath: path) else { return ([], nil) }
        do {
            written = try WireDecoder.decode([SavedRoute].self, from: try JSONReader.parse(Array(data)))
            return (written, nil)
        } catch {
            try? FileManager.default.removeItem(atPath: path + ".damaged")
            try? FileManager.default.moveItem(atPath: path, toPath: path + ".damaged")
            return ([], "the saved routes \(path) could not be read (\(error)); it was moved to \(path).damaged and no route comes back")
        }
    }

    /// Whether `routes` differ from the file in more than positions, or only in positions that the
    /// file has held for `positionInterval`.
    func needsWriting(_ routes: [SavedRoute], now: ContinuousClock.Instant = .now) -> Bool {
        guard routes != written else { return false }
        if routes.map(\.positionless) != written.map(\.positionless) { return true }
        return pacing.lastWrite.map { now - $0 >= Self.positionInterval } ?? true
    }

    func save(_ routes: [SavedRoute]) throws {
        let kept = Array(routes.prefix(Self.limit))
        try JSONWriter.write(WireEncoder.encode(kept), atomicallyTo: path)
        written = kept
    }
}
