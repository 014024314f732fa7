import Synchronization
import UPnP

/// A renderer's GetProtocolInfo Sink list, made into values on first use: gmediarender lists 164
/// formats, which took ~65 µs to read while the picker waited, and listing needs only what
/// `ProtocolInfo.summary` tells. The catalog reads it once the renderer is listed (`load()`),
/// so that the first play does not wait for it either.
final class RendererFormats: Sendable {
    private let sink: String
    private let entries = Mutex<[ProtocolInfo]?>(nil)

    init(sink: String) { self.sink = sink }

    /// The formats it fetches over HTTP.
    var http: [ProtocolInfo] {
        entries.withLock { entries in
            if let entries { return entries }
            let read = ProtocolInfo.list(sink).filter { $0.transport == "http-get" }
            entries = read
            return read
        }
    }

    func load() { _ = http }
}
