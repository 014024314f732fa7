import Foundation
import NIOCore
import NIOHTTP1

/// A renderer's service, controlled by SOAP actions (UDA 2.0 §3): each action is one POST, its
/// answer the output arguments, or a fault with a UPnP error code.
public struct SOAPService: Sendable {
    public let type: String
    public let controlURL: URL
    private let client: HTTPClient
    /// Renderers answer within a second or two; one that takes longer is treated as gone.
    public static let timeout: Duration = .seconds(5)

    public init(_ service: DeviceDescription.Service, client: HTTPClient = HTTPClient()) {
        type = service.type
        controlURL = service.controlURL
        self.client = client
    }

    /// Invokes `action` with `arguments` in order, returning the output arguments by name.
    @discardableResult
    public func invoke(_ action: String, _ arguments: KeyValuePairs<String, String> = [:], timeout: Duration = Self.timeout) async throws(UPnPError) -> [String: String] {
        let response: HTTPClientResponse
        do {
            response = try await client.send(.POST, controlURL, headers: headers(action), body: Self.envelope(action, of: type, arguments), timeout: timeout)
        } catch {
            throw unreachable(action, error)
        }
        return try Self.answer(to: action, status: Int(response.status.code), body: response.body, from: controlURL)
    }

    /// `invoke` on `loop`, the answer read there too (see `HTTPClient.response(_:_:on:over:thenOpening:)`,
    /// which `spare` and `next` are for); the future fails with a `UPnPError`.
    public func invocation(_ action: String, _ arguments: KeyValuePairs<String, String> = [:], timeout: Duration = Self.timeout,
                           on loop: any EventLoop, over spare: HTTPClientSpareConnection? = nil,
                           thenOpening next: HTTPClientSpareConnection? = nil) -> EventLoopFuture<[String: String]> {
        client.response(.POST, controlURL, headers: headers(action), body: Self.envelope(action, of: type, arguments), timeout: timeout,
                        on: loop, over: spare, thenOpening: next)
            .flatMapErrorThrowing { error in throw unreachable(action, error) }
            .flatMapThrowing { [controlURL] response in
                try Self.answer(to: action, status: Int(response.status.code), body: response.body, from: controlURL)
            }
    }

    private func headers(_ action: String) -> HTTPHeaders {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "text/xml; charset=\"utf-8\"")
        headers.add(name: "SOAPACTION", value: "\"\(type)#\(action)\"")
        headers.add(name: "User-Agent", value: UPnP.userAgent)
        return headers
    }

    private func unreachable(_ action: String, _ error: any Error) -> UPnPError {
        UPnPError(.unreachable, "\(action) on \(controlURL.host ?? "the renderer"): \(error)")
    }

    /// The request body: a SOAP 1.1 envelope with the action element in the service's namespace.
    public static func envelope(_ action: String, of type: String, _ arguments: KeyValuePairs<String, String>) -> [UInt8] {
        let body = arguments.map { "<\($0.key)>\($0.value.xmlEscaped)</\($0.key)>" }.joined()
        return Array(("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n"
            + "<s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\" s:encodingStyle=\"http://schemas.xmlsoap.org/soap/encoding/\">"
            + "<s:Body><u:\(action) xmlns:u=\"\(type)\">\(body)</u:\(action)></s:Body></s:Envelope>").utf8)
    }

    /// Reads an action's answer: its output arguments, or the fault as an error naming the code.
    public static func answer(to action: String, status: Int, body: [UInt8], from url: URL) throws(UPnPError) -> [String: String] {
        let who = url.host ?? "the renderer"
        let envelope: XMLNode
        do {
            envelope = try XMLNode.parse(body, what: "the answer to \(action) from \(who)")
        } catch {
            if status != 200 { throw UPnPError(.httpStatus(status), "\(action) failed on \(who): HTTP \(status)") }
            throw UPnPError(.malformedAnswer, error.description)
        }
        if let fault = envelope.find("Body", "Fault") {
            let detail = fault.find("detail", "UPnPError")
            guard let code = detail?.text("errorCode").flatMap({ Int($0) }) else {
                throw UPnPError(.malformedAnswer, "\(action) failed on \(who): a SOAP fault without a UPnP error code (\(fault.text("faultstring") ?? "no reason given"))")
            }
            let said = detail?.text("errorDescription")
            let meaning = UPnPError.meaning(of: code)
            let reason = [said, meaning].compactMap { $0 }.first ?? "no description"
            throw UPnPError(.fault(code: code), "\(who) refused \(action): UPnP error \(code) (\(reason))")
        }
        guard status == 200 else { throw UPnPError(.httpStatus(status), "\(action) failed on \(who): HTTP \(status)") }
        guard let result = envelope.find("Body", action + "Response") else {
            throw UPnPError(.malformedAnswer, "\(who) answered \(action) without a \(action)Response element")
        }
        return Dictionary(result.children.map { ($0.name, $0.text) }, uniquingKeysWith: { first, _ in first })
    }
}
