import Foundation
import NIOCore
import MediaDevice
import UPnP

/// A renderer found on the network: its description, what it can render, and until when its last
/// announcement holds.
struct KnownRenderer {
    let description: DeviceDescription
    /// ConnectionManager's Sink list.
    let sinkFormats: RendererFormats
    /// The formats it takes over HTTP.
    var formats: [ProtocolInfo] { sinkFormats.http }
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
    /// A second connection to the description's server is opened once the description is asked
    /// for: renderers serve their control URLs from there too (when one does not, it is closed
    /// unused), and GetProtocolInfo then goes out as soon as its control URL is read, not a
    /// connect later; the rest of the description is read while the renderer answers it.
    static func read(_ location: URL, from sender: String, maxAge: Int, client: HTTPClient, on loop: any EventLoop,
                     then done: @escaping @Sendable (Result<KnownRenderer, any Error>) -> Void) {
        let spare = client.spareConnection(to: location)
        let description = client.response(.GET, location, timeout: .seconds(3), maximumBodyLength: XMLNode.maximumDocumentLength, on: loop, thenOpening: spare)
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
            .flatMap { response in
                // GetProtocolInfo goes to the ConnectionManager a scan finds, and the description
                // is parsed while the renderer answers; if the parsed one differs, it goes again.
                func protocolInfo(of service: DeviceDescription.Service) -> EventLoopFuture<[String: String]> {
                    SOAPService(service, client: client).invocation("GetProtocolInfo", on: loop, over: spare)
                }
                let formats: EventLoopFuture<[String: String]>
                let description: DeviceDescription
                do {
                    guard response.status == .ok else {
                        throw UPnPError(.httpStatus(Int(response.status.code)), "the description at \(location.absoluteString) answered HTTP \(response.status.code)")
                    }
                    let guess = DeviceDescriptionDocument.connectionManagerGuess(in: response.body, location: location)
                    let early = guess.map(protocolInfo(of:))
                    let document = try DeviceDescriptionDocument(xml: response.body, location: location)
                    let connectionManager = try document.service(UPnP.connectionManager)
                    if let early, let guess, guess.type == connectionManager.type, guess.controlURL == connectionManager.controlURL {
                        formats = early
                    } else {
                        formats = protocolInfo(of: connectionManager)
                    }
                    description = try DeviceDescription(document)
                } catch {
                    return loop.makeFailedFuture(error)
                }
                return formats.flatMapThrowing { answer in
                    return try renderer(description, formats: answer["Sink"] ?? "", from: sender, maxAge: maxAge)
                }
            }
    }

    private static func renderer(_ description: DeviceDescription, formats sink: String, from sender: String, maxAge: Int) throws(UPnPError) -> KnownRenderer {
        let location = description.location
        let formats = ProtocolInfo.summary(of: sink)
        guard formats.fetchesOverHTTP else {
            throw UPnPError(.brokenDescription, "\(description.friendlyName) (\(location.host ?? "?")) lists no format it can fetch over HTTP in GetProtocolInfo")
        }
        let id = deviceID(description.udn)
        var capabilities: MediaOutputDevice.Capabilities = [.urlPlayback]
        if formats.rendersAudio { capabilities.insert(.realtimeAudioStreaming) }
        guard let device = MediaOutputDevice(id: id, displayName: String(description.friendlyName.prefix(128)), capabilities: capabilities,
                                             deviceType: formats.rendersVideo ? .tv : .speaker, volumeControl: .absolute, canMute: true) else {
            throw UPnPError(.brokenDescription, "the renderer at \(location.absoluteString) has a name that cannot be shown: \"\(description.friendlyName)\"")
        }
        return KnownRenderer(description: description, sinkFormats: RendererFormats(sink: sink), device: device, address: sender, expires: .now + .seconds(maxAge))
    }
}
