import CAvahi
import Glibc

/// Announces one DNS-SD service (name, type, port, TXT) for as long as it lives; withdraws it on
/// `cancel()`, and announces it again when the daemon comes back. A name already taken on the
/// network is replaced by Avahi's next alternative ("Living Room TV #2").
public final class ServicePublication: AvahiClientUser, @unchecked Sendable {
    public enum Event: Sendable {
        /// The service is announced under `name`.
        case established(name: String)
        case failed(String)
    }

    public let type: String
    public let port: UInt16
    private let connection: AvahiConnection
    private let handler: @Sendable (Event) -> Void
    // On Avahi's thread or with its lock held:
    private(set) var name: String
    private let txt: [(String, String)]
    private var group: OpaquePointer?

    public init(name: String, type: String, port: UInt16, txt: [(String, String)], on connection: AvahiConnection,
                handler: @escaping @Sendable (Event) -> Void = { _ in }) {
        self.name = name
        self.type = type
        self.port = port
        self.txt = txt
        self.connection = connection
        self.handler = handler
        connection.add(self)
    }

    /// Withdraws the service.
    public func cancel() { connection.remove(self) }

    func clientRunning(_ client: OpaquePointer) {
        if group == nil {
            group = avahi_entry_group_new(client, { group, state, context in
                AvahiCallbackScope.run { Unmanaged<ServicePublication>.fromOpaque(context!).takeUnretainedValue().groupChanged(group, state) }
            }, Unmanaged.passUnretained(self).toOpaque())
        }
        guard let group else {
            handler(.failed(AvahiError("cannot create an entry group", code: avahi_client_errno(client)).message))
            return
        }
        register(group)
    }

    func clientLost() {
        if let group { avahi_entry_group_free(group) }
        group = nil
    }

    private func register(_ group: OpaquePointer) {
        avahi_entry_group_reset(group)
        let list = ResolvedService.stringList(txt)
        defer { avahi_string_list_free(list) }
        var code = avahi_entry_group_add_service_strlst(group, anyInterface, ipv4,
                                                        AvahiPublishFlags(rawValue: 0), name, type, nil, nil, port, list)
        if code == Int32(AVAHI_ERR_COLLISION) {
            rename()
            code = avahi_entry_group_add_service_strlst(group, anyInterface, ipv4,
                                                        AvahiPublishFlags(rawValue: 0), name, type, nil, nil, port, list)
        }
        if code >= 0 { code = avahi_entry_group_commit(group) }
        if code < 0 { handler(.failed(AvahiError("cannot announce \(name)", code: code).message)) }
    }

    private func rename() {
        let next = avahi_alternative_service_name(name)!
        name = String(cString: next)
        avahi_free(next)
    }

    private func groupChanged(_ reporting: OpaquePointer?, _ state: AvahiEntryGroupState) {
        switch state {
        case AVAHI_ENTRY_GROUP_ESTABLISHED:
            handler(.established(name: name))
        case AVAHI_ENTRY_GROUP_COLLISION:
            rename()
            if let group = group ?? reporting { register(group) }
        case AVAHI_ENTRY_GROUP_FAILURE:
            let code = reporting.map { avahi_client_errno(avahi_entry_group_get_client($0)) } ?? Int32(AVAHI_ERR_FAILURE)
            handler(.failed(AvahiError("announcing \(name) failed", code: code).message))
        default:
            break
        }
    }
}
