/// An A2DP stream cannot be configured, packetized or sent; the sentence says what and why.
public struct A2DPError: Error, Sendable, Hashable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
