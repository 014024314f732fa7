import ArgumentParser
import Foundation
import MediaRouteIPC
import MediaRouteWire

/// Sends a payload file to the daemon's push endpoint over real HTTP/1.1, exactly as an app's
/// server would (topic, push type, bearer credential), and says what the endpoint answered: a test
/// tool for people writing a server.
struct PushSend: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send",
        abstract: "Push a payload file to a device token (the default `push` command).",
        discussion: "The app is required: a server sends its topic (APP.push-type.nowplaying) as a header, so the payload cannot tell it.")

    @OptionGroup var options: GlobalOptions

    @Argument(help: "A JSON file holding the payload as a server sends it: {\"aps\": {\"event\", \"timestamp\", \"attributes\"}}.")
    var file: String

    @Option(help: "The device token to push to (hex: a session's or a push-to-start token).")
    var token: String

    @Option(help: "The app the push is for; the topic sent is APP.push-type.nowplaying.")
    var app: String

    @Option(help: "The bearer credential to send. Default: the app's, asked of mediarouted (which makes one if the app has none).")
    var credential: String?

    /// What the endpoint answered, for `--json`.
    struct Outcome: Codable {
        let status: Int
        let apnsID: String?
        let reason: String?
        let message: String?
    }

    func run() async throws {
        // Bad arguments are refused before any request.
        guard let token = PushToken.normalized(token) else { throw ValidationError("--token \"\(self.token)\" is not a device token: \(PushToken.rule)") }
        guard let payload = FileManager.default.contents(atPath: file) else {
            throw ValidationError(FileManager.default.fileExists(atPath: file) ? "cannot read \(file)" : "\(file) does not exist")
        }
        do { _ = try JSONReader.parse(payload) } catch { throw ValidationError("\(file) is not JSON: \(error)") }
        if let credential, credential.isEmpty { throw ValidationError("--credential must not be empty; leave it out to use the app's own") }

        let client = try await options.connect()
        let endpoint: String
        let bearer: String
        do {
            guard let address = try await client.call(Control.Status()).pushAddress else {
                throw CLIError("mediarouted accepts no pushes (it runs with --no-push, or could not listen: see its log)")
            }
            endpoint = address
            if let credential { bearer = credential } else {
                bearer = try await client.call(Control.PushCredential(application: app, rotate: false)).credential
            }
            await client.close()
        } catch {
            await client.close()
            throw error
        }

        let answer = try await PushPost.send(to: endpoint, path: "/3/device/\(token)",
                                             headers: [("apns-topic", "\(app).push-type.nowplaying"), ("apns-push-type", "nowplaying"),
                                                       ("authorization", "bearer \(bearer)"), ("content-type", "application/json")],
                                             body: Array(payload))
        let refusal = (try? JSONReader.parse(answer.body))?.objectValue
        let outcome = Outcome(status: answer.status, apnsID: answer.header("apns-id"), reason: refusal?["reason"]?.stringValue,
                              message: refusal?["message"]?.stringValue)
        guard answer.status == 200 else {
            if options.json {
                options.output(outcome) { "" }
                throw ExitCode.failure
            }
            let said = outcome.reason.map { "\($0): \(outcome.message ?? "")" } ?? String(decoding: answer.body.prefix(500), as: UTF8.self)
            throw CLIError("push refused with \(answer.status) \(said)")
        }
        options.output(outcome) { "delivered (apns-id \(outcome.apnsID ?? "-"))" }
    }
}
