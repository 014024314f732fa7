/// The screen could not be captured; the sentence says which display and why.
public struct ScreenCaptureError: Error, Sendable, Hashable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
