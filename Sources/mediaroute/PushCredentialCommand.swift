import ArgumentParser
import MediaRouteWire

/// Prints an app's push credential (made on first request), for the operator to give the app's
/// server; `--rotate` replaces it, and the old one stops working at once.
struct PushCredentialCommand: SimpleCommand {
    static let configuration = CommandConfiguration(
        commandName: "credential",
        abstract: "Print the credential an app's server sends as `authorization: bearer CREDENTIAL` (made if the app has none).")

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The app's identifier (the APP of its topic APP.push-type.nowplaying).")
    var app: String

    @Flag(help: "Replace the credential; the old one stops working at once.")
    var rotate = false

    func run() async throws {
        let issued = try await once(Control.PushCredential(application: app, rotate: rotate))
        options.output(issued) { issued.credential }
    }
}

/// Prints an app's push-to-start token: where its server sends `start` pushes (the app reads the
/// same from `RemoteMediaSession.pushToStartToken`).
struct PushTokenCommand: SimpleCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Print the push-to-start token an app's server sends start pushes to (made if the app has none).")

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The app's identifier.")
    var app: String

    func run() async throws {
        let issued = try await once(Control.PushCredential(application: app, rotate: false))
        options.output(issued) { issued.pushToStartToken }
    }
}
