import Foundation
import UPnP

/// UPnP MediaRenderers that answer an SSDP `M-SEARCH` from this process (on every interface that
/// can multicast, as the DLNA driver searches), with the friendly name their description gives,
/// or why it could not be read.
enum SSDPProbe {
    struct Renderer: Sendable {
        let location: URL
        let sender: String
        let udn: String
        let name: String?
        /// Why its description could not be read, when it could not.
        let problem: String?
    }

    static func search(listening: Duration) async -> [Renderer] {
        let discovery = SSDPDiscovery()
        let collector = Task {
            var alive: [URL: SSDPAnnouncement] = [:]
            for await announcement in discovery.announcements {
                guard announcement.target.hasPrefix("urn:schemas-upnp-org:device:MediaRenderer:"), case .alive(let location, _) = announcement.kind else { continue }
                alive[location] = announcement
            }
            return alive
        }
        await discovery.search(for: UPnP.mediaRendererTypes)
        try? await Task.sleep(for: listening)
        await discovery.close()
        let alive = await collector.value
        return await withTaskGroup(of: Renderer.self) { group in
            for (location, announcement) in alive {
                group.addTask { await describe(location, announcement) }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
    }

    private static func describe(_ location: URL, _ announcement: SSDPAnnouncement) async -> Renderer {
        do {
            let response = try await HTTPClient().send(.GET, location, timeout: .seconds(2))
            guard response.status == .ok else {
                return Renderer(location: location, sender: announcement.sender, udn: announcement.udn, name: nil,
                                problem: "its description at \(location.absoluteString) answered HTTP \(response.status.code)")
            }
            let description = try DeviceDescription(xml: response.body, location: location)
            return Renderer(location: location, sender: announcement.sender, udn: announcement.udn, name: description.friendlyName, problem: nil)
        } catch {
            return Renderer(location: location, sender: announcement.sender, udn: announcement.udn, name: nil,
                            problem: "its description at \(location.absoluteString) cannot be read: \(error)")
        }
    }
}
