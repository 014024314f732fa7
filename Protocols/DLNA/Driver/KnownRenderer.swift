import Foundation
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

    /// Reads a renderer's description and formats; a broken renderer is an error naming what is wrong.
    static func fetch(_ location: URL, from sender: String, maxAge: Int, client: HTTPClient) async throws(UPnPError) -> KnownRenderer {
        let response: HTTPClientResponse
        do {
            response = try await client.send(.GET, location, timeout: .seconds(3), maximumBodyLength: XMLNode.maximumDocumentLength)
        } catch {
            throw UPnPError(.unreachable, "cannot fetch the description at \(location.absoluteString): \(error)")
        }
        guard response.status == .ok else {
            throw UPnPError(.httpStatus(Int(response.status.code)), "the description at \(location.absoluteString) answered HTTP \(response.status.code)")
        }
        let description = try DeviceDescription(xml: response.body, location: location)
        let answer = try await SOAPService(description.connectionManager, client: client).invoke("GetProtocolInfo")
        let formats = ProtocolInfo.list(answer["Sink"] ?? "").filter { $0.transport == "http-get" }
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
