/// Why a server could not start, naming the address.
public struct HTTPServerError: Error, Sendable, CustomStringConvertible {
    public var description: String
}
