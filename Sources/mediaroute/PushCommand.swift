import ArgumentParser

/// `mediaroute push FILE --token T --app APP` sends a push as an app's server would;
/// `mediaroute push credential APP` prints the credential that server sends.
struct Push: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send a push to mediarouted's push endpoint as an app's server would, or print an app's push credential or push-to-start token.",
        subcommands: [PushSend.self, PushCredentialCommand.self, PushTokenCommand.self], defaultSubcommand: PushSend.self)
}
