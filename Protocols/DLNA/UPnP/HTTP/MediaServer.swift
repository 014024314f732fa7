import Foundation
import NIOCore
import NIOHTTP1
import Synchronization

/// Media the renderer fetches from us: files of the controller and endless live streams, under
/// unguessable paths, only to the one renderer address each was published for (a renderer cannot
/// reach `file://` of ours, and nobody else on the LAN should reach it either).
///
/// It answers requests an `HTTPServer` hands it (see `handle`). Files: GET and HEAD, one byte
/// range (206, `Content-Range`; several ranges get the whole file 200; unsatisfiable 416), read in
/// chunks. Live streams: every GET starts a new body, answered 200 without a length (chunked), and
/// `Range` is ignored (always 200 from "now"). Unpublishing refuses later requests; transfers under
/// way go on until their body ends (a live body ends when its producer finishes it).
public final class MediaServer: Sendable {
    private enum Content: Sendable {
        case file(path: String, mimeType: String)
        case stream(mimeType: String, makeBody: @Sendable () -> AsyncThrowingStream<[UInt8], any Error>)
    }

    private struct Publication: Sendable {
        let content: Content
        let client: String
        var requests = 0
        var bytes: Int64 = 0
    }

    /// By token: the 128-bit random hex path segment.
    private let publications = Mutex<[String: Publication]>([:])

    public init() {}

    /// Returns the path (`/media/<128-bit random hex>/<file name>`) under which `file` is served to
    /// `client` (IP text).
    public func publish(file path: String, mimeType: String, for client: String) -> String {
        let name = (path as NSString).lastPathComponent
        let encoded = name.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/;?#%"))) ?? "file"
        return publish(.file(path: path, mimeType: mimeType), for: client, name: encoded.isEmpty ? "file" : encoded)
    }

    /// A live stream: every GET starts a new `makeBody()`, whose end ends that response; HEAD
    /// answers headers only.
    public func publish(stream mimeType: String, for client: String,
                        makeBody: @escaping @Sendable () -> AsyncThrowingStream<[UInt8], any Error>) -> String {
        publish(.stream(mimeType: mimeType, makeBody: makeBody), for: client, name: "live")
    }

    public func unpublish(_ path: String) {
        guard let token = Self.token(of: path) else { return }
        _ = publications.withLock { $0.removeValue(forKey: token) }
    }

    /// Bytes served and GET requests seen for a published path (zero once unpublished): whether
    /// the renderer fetched, and how much.
    public func statistics(for path: String) -> (requests: Int, bytes: Int64) {
        guard let token = Self.token(of: path) else { return (0, 0) }
        return publications.withLock { $0[token].map { ($0.requests, $0.bytes) } ?? (0, 0) }
    }

    /// The answer to a request under `/media/`; nil for other paths (so the caller's other routes
    /// can answer them).
    public func handle(_ request: HTTPServer.Request) async -> HTTPServer.Response? {
        guard request.path.hasPrefix("/media/") else { return nil }
        guard let token = Self.token(of: request.path), let publication = publications.withLock({ $0[token] }) else {
            return .text(.notFound, "Nothing is published at \(request.path).")
        }
        guard Self.canonical(request.remoteAddress) == Self.canonical(publication.client) else {
            return .text(.forbidden, "\(request.path) is served to \(publication.client) only, not to \(request.remoteAddress).")
        }
        guard request.method == .GET || request.method == .HEAD else {
            return .text(.methodNotAllowed, "\(request.path) answers GET and HEAD only, not \(request.method.rawValue).", headers: ["Allow": "GET, HEAD"])
        }
        if request.method == .GET { publications.withLock { $0[token]?.requests += 1 } }
        var response: HTTPServer.Response
        switch publication.content {
        case .file(let path, let mimeType):
            response = await fileResponse(request, path: path, mimeType: mimeType)
        case .stream(let mimeType, let makeBody):
            // HEAD gets an empty stream: no length is announced, and no live body is started.
            let body = request.method == .GET ? makeBody() : AsyncThrowingStream { $0.finish() }
            response = HTTPServer.Response(status: .ok, headers: Self.headers(mimeType, features: DLNAContentFeatures.liveStream),
                                           body: .stream(length: nil, body))
        }
        if response.status == .ok || response.status == .partialContent {
            response.bodyChunkWritten = { [weak self] count in
                self?.publications.withLock { $0[token]?.bytes += Int64(count) }
            }
        }
        return response
    }

    private func fileResponse(_ request: HTTPServer.Request, path: String, mimeType: String) async -> HTTPServer.Response {
        let file: MediaFile
        do {
            file = try await MediaFile.open(path)
        } catch {
            switch error {
            case .missing:
                return .text(.gone, "The file published at \(request.path) (\(path)) no longer exists.")
            case .unreadable(let reason):
                return .text(.internalServerError, "The file published at \(request.path) (\(path)) cannot be read: \(reason).")
            }
        }
        var headers = Self.headers(mimeType, features: DLNAContentFeatures.file)
        headers.add(name: "Accept-Ranges", value: "bytes")
        let status: HTTPResponseStatus
        let range: ByteRange
        switch ByteRange.parse(request.headers.first(name: "range"), size: file.size) {
        case .whole:
            status = .ok
            range = ByteRange(first: 0, last: file.size - 1)
        case .partial(let partial):
            status = .partialContent
            range = partial
            headers.add(name: "Content-Range", value: "bytes \(range.first)-\(range.last)/\(file.size)")
        case .unsatisfiable:
            headers.add(name: "Content-Range", value: "bytes */\(file.size)")
            return .text(.rangeNotSatisfiable, "The range \(request.headers.first(name: "range") ?? "") lies outside the \(file.size) bytes of \(request.path).",
                         headers: headers)
        }
        if request.method == .HEAD {
            headers.add(name: "Content-Length", value: String(range.count))
            return HTTPServer.Response(status: status, headers: headers)
        }
        return HTTPServer.Response(status: status, headers: headers, body: .stream(length: range.count, file.chunks(first: range.first, last: range.last)))
    }

    private func publish(_ content: Content, for client: String, name: String) -> String {
        let token = RandomToken.make()
        publications.withLock { $0[token] = Publication(content: content, client: client) }
        return "/media/\(token)/\(name)"
    }

    /// Content-Type and the DLNA headers. `contentFeatures.dlna.org` is always sent, so a renderer
    /// asking with `getcontentFeatures.dlna.org: 1` is answered too.
    private static func headers(_ mimeType: String, features: String) -> HTTPHeaders {
        ["Content-Type": mimeType, "transferMode.dlna.org": "Streaming", "contentFeatures.dlna.org": features]
    }

    /// The token of `/media/<token>/...`; the name after it is for the renderer's eyes only.
    private static func token(of path: String) -> String? {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count >= 3, parts[0].isEmpty, parts[1] == "media", parts[2].count == 32 else { return nil }
        return String(parts[2])
    }

    /// One spelling per address: `::ffff:10.0.0.2` is `10.0.0.2`, IPv6 in its shortest form and
    /// without a zone (`fe80::1%eth0` is `fe80::1`: the peer address of a connection has none).
    private static func canonical(_ address: String) -> String {
        let bare = address.split(separator: "%", maxSplits: 1).first.map(String.init) ?? address
        let text = (try? SocketAddress(ipAddress: bare, port: 0))?.ipAddress ?? bare
        let mapped = "::ffff:"
        if text.lowercased().hasPrefix(mapped), text.contains(".") { return String(text.dropFirst(mapped.count)) }
        return text
    }
}
