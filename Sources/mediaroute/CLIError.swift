/// A failure the CLI reports as one sentence (exit status 1), unlike a usage error (64).
struct CLIError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
