import Foundation
import NIOCore
import MediaDevice
import UPnP

/// A renderer found on the network: its description, what it can render, and until when its last
/// announcement holds.
struct KnownRenderer {
    let description: DeviceDescription
    /// ConnectionManager's Sink list: the formats it takes over HTTP.
    let formats: [ProtocolInfo]
    let device: MediaOutputDevice
    /// The address it announced itself from, which the media server serves only.
    var address: String
    var expires: ContinuousClock.Instant
    /// When it last announced itself or answered a search.
    var heard = ContinuousClock.now

    var name: String { description.friendlyName }

    static func deviceID(_ udn: String) -> String { "dlna:" + udn.dropFirst("uuid:".count) }

    /// The description, then GetProtocolInfo, each read and parsed on `loop` as it arrives: the
    /// caller is woken once, with the renderer (a hop to another thread at each of the four
    /// steps cost more than the renderer took to answer them). `done` gets it there, or a
    /// `UPnPError` naming what is wrong with a broken renderer.
    ///
    /// A second connection to the description's server is opened with the first: renderers serve
    /// their control URLs from there too (when one does not, it is closed unused), and
    /// GetProtocolInfo then goes out as soon as the description is read, not a connect later.
    static func read(_ location: URL, from sender: String, maxAge: Int, client: HTTPClient, on loop: any EventLoop,
                     then done: @escaping @Sendable (Result<KnownRenderer, any Error>) -> Void) {
        let description = client.response(.GET, location, timeout: .seconds(3), maximumBodyLength: XMLNode.maximumDocumentLength, on: loop)
        let spare = client.spareConnection(to: location, timeout: .seconds(3), on: loop)
        let renderer = fetch(description, location, from: sender, maxAge: maxAge, client: client, on: loop, over: spare)
        renderer.whenComplete { result in
            done(result)
            // After the renderer is taken (closing costs tens of microseconds); a spare that
            // carried GetProtocolInfo is closed already.
            spare?.close()
        }
    }

    private static func fetch(_ description: EventLoopFuture<HTTPClientResponse>, _ location: URL, from sender: String, maxAge: Int, client: HTTPClient,
                              on loop: any EventLoop, over spare: HTTPClientSpareConnection?) -> EventLoopFuture<KnownRenderer> {
        description
            .flatMapErrorThrowing { error in throw UPnPError(.unreachable, "cannot fetch the description at \(location.absoluteString): \(error)") }
            .flatMapThrowing { response in
                guard response.status == .ok else {
                    throw UPnPError(.httpStatus(Int(response.status.code)), "the description at \(location.absoluteString) answered HTTP \(response.status.code)")
                }
                return try DeviceDescription(xml: response.body, location: location)
            }
            .flatMap { description in
                SOAPService(description.connectionManager, client: client).invocation("GetProtocolInfo", on: loop, over: spare).flatMapThrowing { answer in
                    return try renderer(description, formats: answer["Sink"] ?? "", from: sender, maxAge: maxAge)
                }
            }
    }

    private static func renderer(_ description: DeviceDescription, formats sink: String, from sender: String, maxAge: Int) throws(UPnPError) -> KnownRenderer {
        let location = description.location
        let formats = ProtocolInfo.list(sink).filter { $0.transport == "http-get" }
        guard !formats.isEmpty else {
            throw UPnPError(.brokenDescription, "\(description.friendlyName) (\(location.host ?? "?")) lists no format it can fetch over HTTP in GetProtocolInfo")
        }
        let id = deviceID(description.udn)
        let audio = formats.contains { $0.contentFormat.lowercased().hasPrefix("audio/") }
        var capabilities: MediaOutputDevice.Capabilities = [.urlPlayback]
        if audio { capabilities.insert(.realtimeAudioStreaming) }
        guard let device = MediaOutputDevice(id: id, displayName: String(description.friendlyName.prefix(128)), capabilities: capabilities,
                                             deviceType: formats.rendersVideo ? .tv : .speaker, volumeControl: .absolute, canMute: true) else {
            throw UPnPError(.brokenDescription, "the renderer at \(location.absoluteString) has a name that cannot be shown: \"\(description.friendlyName)\"")
        }
        return KnownRenderer(description: description, formats: formats, device: device, address: sender, expires: .now + .seconds(maxAge))
    }
}
