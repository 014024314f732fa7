/// Route events to the connections that listen (apps, and streams' openers), in the order they
/// happened, and the last few for `mediaroute status`. Published on the supervisor's executor.
final class EventBus {
    private var subscribers: [Int: @Sendable (RouteEvent) -> Void] = [:]
    private var nextSubscriberID = 1
    /// Route deactivations and the like, newest last.
    private(set) var recent: [String] = []
    static let recentLimit = 20

    func subscribe(_ handler: @escaping @Sendable (RouteEvent) -> Void) -> Int {
        defer { nextSubscriberID += 1 }
        subscribers[nextSubscriberID] = handler
        return nextSubscriberID
    }

    func unsubscribe(_ id: Int) { subscribers[id] = nil }

    func publish(_ event: RouteEvent) {
        for subscriber in subscribers.values { subscriber(event) }
    }

    func remember(_ event: String) {
        recent.append(event)
        if recent.count > Self.recentLimit { recent.removeFirst() }
    }
}
