import Synchronization

/// What a test saw arrive from another task (route changes, events), in order.
public final class EventLog<Element: Sendable>: Sendable {
    private let list = Mutex<[Element]>([])
    public init() {}
    public func append(_ element: Element) { list.withLock { $0.append(element) } }
    public var all: [Element] { list.withLock { $0 } }
}
