import Foundation
import NIOHTTP1

/// A subscription to a service's events (UDA 2.0 §4): the renderer NOTIFYs our callback URL
/// until the subscription's timeout, unless renewed first.
public struct GENASubscription: Sendable, Hashable {
    /// The subscription id the renderer gave (`SID`), which its NOTIFYs carry.
    public var sid: String
    /// How long the renderer keeps it without renewal.
    public var timeout: Duration
    public var eventURL: URL
    /// The time asked for, at the subscription and at each renewal.
    public var requested: Int

    /// What we ask for unless told otherwise; renderers may grant less, and we renew well before
    /// what they grant.
    public static let requestedSeconds = 300

    /// Subscribes `callback` to the service's events for `seconds` (renewals ask for as long).
    public static func subscribe(_ eventURL: URL, callback: URL, seconds: Int = requestedSeconds, client: HTTPClient) async throws(UPnPError) -> GENASubscription {
        var headers = HTTPHeaders()
        headers.add(name: "CALLBACK", value: "<\(callback.absoluteString)>")
        headers.add(name: "NT", value: "upnp:event")
        headers.add(name: "TIMEOUT", value: "Second-\(seconds)")
        headers.add(name: "User-Agent", value: UPnP.userAgent)
        return try await request(eventURL, headers: headers, seconds: seconds, client: client)
    }

    /// Extends the subscription; a renderer that forgot it (it rebooted) answers 412.
    public func renewed(client: HTTPClient) async throws(UPnPError) -> GENASubscription {
        var headers = HTTPHeaders()
        headers.add(name: "SID", value: sid)
        headers.add(name: "TIMEOUT", value: "Second-\(requested)")
        return try await Self.request(eventURL, headers: headers, seconds: requested, client: client)
    }

    /// Ends the subscription (best effort: a renderer that is gone has forgotten it anyway).
    public func cancel(client: HTTPClient) async {
        var headers = HTTPHeaders()
        headers.add(name: "SID", value: sid)
        _ = try? await client.send(.UNSUBSCRIBE, eventURL, headers: headers, timeout: .seconds(2))
    }

    /// When to renew: halfway through what was granted (at least 1 s).
    public var renewalDelay: Duration { max(timeout / 2, .seconds(1)) }

    private static func request(_ url: URL, headers: HTTPHeaders, seconds: Int, client: HTTPClient) async throws(UPnPError) -> GENASubscription {
        let who = url.host ?? "the renderer"
        let response: HTTPClientResponse
        do {
            response = try await client.send(.SUBSCRIBE, url, headers: headers)
        } catch {
            throw UPnPError(.unreachable, "subscribing to events of \(who): \(error)")
        }
        guard response.status == .ok else {
            throw UPnPError(.httpStatus(Int(response.status.code)), "\(who) refused the event subscription: HTTP \(response.status.code) \(response.status.reasonPhrase)")
        }
        guard let sid = response.headers.first(name: "SID"), !sid.isEmpty else {
            throw UPnPError(.malformedAnswer, "\(who) accepted the event subscription but gave no SID")
        }
        let granted = grantedSeconds(response.headers.first(name: "TIMEOUT"), asked: seconds)
        return GENASubscription(sid: sid, timeout: .seconds(granted), eventURL: url, requested: seconds)
    }

    /// `Second-N` (or `infinite`, which UDA 2.0 deprecates: treated as what we asked for).
    static func grantedSeconds(_ header: String?, asked: Int = requestedSeconds) -> Int {
        guard let header, header.lowercased().hasPrefix("second-"), let seconds = Int(header.dropFirst(7)), seconds > 0 else { return asked }
        return min(seconds, 86_400)
    }
}
