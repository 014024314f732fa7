/// A driver's browse for one service type, on the main actor: the Avahi connection is made at the
/// first `start` and kept (publications such as a DACP server use it too), browsing runs from
/// `start` to `stop`, and a daemon that becomes unreachable while browsing is said once per loss.
@MainActor
public final class ServiceBrowser {
    public let type: String
    /// The connection, once `start` made it.
    public private(set) var connection: AvahiConnection?
    private var browse: ServiceBrowse?
    private let onEvent: @MainActor (ServiceBrowse.Event) -> Void
    private let onUnavailable: @MainActor (String) -> Void

    /// `onEvent` gets what the browse reports; `onUnavailable`, why Avahi cannot be reached while browsing.
    public init(type: String, onEvent: @escaping @MainActor (ServiceBrowse.Event) -> Void, onUnavailable: @escaping @MainActor (String) -> Void) {
        self.type = type
        self.onEvent = onEvent
        self.onUnavailable = onUnavailable
    }

    public var isBrowsing: Bool { browse != nil }

    /// Connects if not yet, and browses if not yet.
    public func start() throws(AvahiError) {
        if connection == nil {
            connection = try AvahiConnection { [weak self] state in
                guard case .unavailable(let why) = state else { return }
                Task { @MainActor in if self?.isBrowsing == true { self?.onUnavailable(why) } }
            }
        }
        guard browse == nil, let connection else { return }
        browse = ServiceBrowse(type: type, on: connection) { [weak self] event in
            Task { @MainActor in self?.onEvent(event) }
        }
    }

    public func stop() {
        browse?.cancel()
        browse = nil
    }
}
