import CAvahi
import Glibc

/// Browses for one DNS-SD service type and resolves every instance, keeping the resolvers running
/// so that address and TXT changes are reported too.
///
/// While the daemon is away every instance is reported lost; when it is back browsing resumes.
public final class ServiceBrowse: AvahiClientUser, @unchecked Sendable {
    public enum Event: Sendable {
        /// A new instance, or new details (address, port, TXT) of a known one.
        case found(ResolvedService)
        case lost(ResolvedService.Instance)
        /// Everything Avahi knew when browsing (re)started has been reported; more may come later.
        case allForNow
        /// Browsing or resolving failed; the sentence says why.
        case failed(String)
    }

    public let type: String
    private let connection: AvahiConnection
    private let handler: @Sendable (Event) -> Void
    // On Avahi's thread or with its lock held:
    private var browser: OpaquePointer?
    private var resolvers: [ResolvedService.Instance: OpaquePointer] = [:]
    private var resolved: [ResolvedService.Instance: ResolvedService] = [:]
    /// Instances the browser reported and has not withdrawn, and retries of their failed resolvers.
    private var announced = Set<ResolvedService.Instance>()
    private var retries: [ResolvedService.Instance: AvahiTimer] = [:]
    /// How long after a failed resolve to try again: Avahi does not announce the instance twice.
    static let resolveRetryMilliseconds: UInt32 = 2000
    private var cancelled = false

    /// Starts browsing for `type` (e.g. `_mediaroute._tcp`) on IPv4, on every interface.
    public init(type: String, on connection: AvahiConnection, handler: @escaping @Sendable (Event) -> Void) {
        self.type = type
        self.connection = connection
        self.handler = handler
        connection.add(self)
    }

    /// Stops browsing; nothing more is reported (not even the instances it found going away).
    public func cancel() {
        connection.locked { cancelled = true }
        connection.remove(self)
    }

    func clientRunning(_ client: OpaquePointer) {
        guard browser == nil else { return }
        browser = avahi_service_browser_new(client, anyInterface, ipv4, type, nil,
                                            AvahiLookupFlags(rawValue: 0), { _, interface, _, event, name, type, domain, _, context in
            AvahiCallbackScope.run {
                let browse = Unmanaged<ServiceBrowse>.fromOpaque(context!).takeUnretainedValue()
                browse.browsed(event, interface: interface, name: name, type: type, domain: domain)
            }
        }, Unmanaged.passUnretained(self).toOpaque())
        if browser == nil { handler(.failed(AvahiError("cannot browse for \(type)", code: avahi_client_errno(client)).message)) }
    }

    func clientLost() {
        resolvers.values.forEach { avahi_service_resolver_free($0) }
        resolvers.removeAll()
        retries.removeAll()
        announced.removeAll()
        if let browser { avahi_service_browser_free(browser) }
        browser = nil
        let gone = resolved.keys
        resolved.removeAll()
        if !cancelled { gone.forEach { handler(.lost($0)) } }
    }

    private func browsed(_ event: AvahiBrowserEvent, interface: AvahiIfIndex, name: UnsafePointer<CChar>?, type: UnsafePointer<CChar>?,
                         domain: UnsafePointer<CChar>?) {
        switch event {
        case AVAHI_BROWSER_NEW:
            guard let name, let type, let domain, browser != nil else { return }
            let instance = ResolvedService.Instance(name: String(cString: name), type: String(cString: type), domain: String(cString: domain), interface: interface)
            announced.insert(instance)
            resolve(instance)
        case AVAHI_BROWSER_REMOVE:
            guard let name, let type, let domain else { return }
            let instance = ResolvedService.Instance(name: String(cString: name), type: String(cString: type), domain: String(cString: domain), interface: interface)
            announced.remove(instance)
            retries[instance] = nil
            if let resolver = resolvers.removeValue(forKey: instance) { avahi_service_resolver_free(resolver) }
            if resolved.removeValue(forKey: instance) != nil { handler(.lost(instance)) }
        case AVAHI_BROWSER_FAILURE:
            let code = browser.map { avahi_client_errno(avahi_service_browser_get_client($0)) } ?? Int32(AVAHI_ERR_FAILURE)
            handler(.failed(AvahiError("browsing for \(self.type) failed", code: code).message))
        case AVAHI_BROWSER_ALL_FOR_NOW:
            handler(.allForNow)
        default:
            break  // cache exhausted
        }
    }

    /// Starts the long-lived resolver of an announced instance.
    private func resolve(_ instance: ResolvedService.Instance) {
        guard resolvers[instance] == nil, !cancelled, let browser else { return }
        let client = avahi_service_browser_get_client(browser)
        let resolver = avahi_service_resolver_new(client, instance.interface, ipv4, instance.name, instance.type, instance.domain,
                                                  ipv4, AvahiLookupFlags(rawValue: 0),
                                                  { _, interface, _, event, name, type, domain, host, address, port, txt, _, context in
            AvahiCallbackScope.run {
                let browse = Unmanaged<ServiceBrowse>.fromOpaque(context!).takeUnretainedValue()
                browse.resolved(event, interface: interface, name: name, type: type, domain: domain, host: host, address: address, port: port, txt: txt)
            }
        }, Unmanaged.passUnretained(self).toOpaque())
        if let resolver { resolvers[instance] = resolver } else {
            handler(.failed(AvahiError("cannot resolve \(instance.name)", code: avahi_client_errno(client)).message))
            retryResolving(instance)
        }
    }

    private func retryResolving(_ instance: ResolvedService.Instance) {
        guard browser != nil, announced.contains(instance) else { return }
        retries[instance] = connection.timer(after: Self.resolveRetryMilliseconds) { [unowned self] in
            retries[instance] = nil
            if announced.contains(instance) { resolve(instance) }
        }
    }

    private func resolved(_ event: AvahiResolverEvent, interface: AvahiIfIndex, name: UnsafePointer<CChar>?, type: UnsafePointer<CChar>?,
                          domain: UnsafePointer<CChar>?, host: UnsafePointer<CChar>?, address: UnsafePointer<AvahiAddress>?, port: UInt16,
                          txt: UnsafeMutablePointer<AvahiStringList>?) {
        guard let name, let type, let domain else { return }
        let instance = ResolvedService.Instance(name: String(cString: name), type: String(cString: type), domain: String(cString: domain), interface: interface)
        guard event == AVAHI_RESOLVER_FOUND, let address else {
            // A resolver that fails (the host stopped answering) is freed and, while the instance is
            // still announced, made again after a pause.
            if let resolver = resolvers.removeValue(forKey: instance) { avahi_service_resolver_free(resolver) }
            if resolved.removeValue(forKey: instance) != nil { handler(.lost(instance)) }
            retryResolving(instance)
            return
        }
        var text = [CChar](repeating: 0, count: Int(AVAHI_ADDRESS_STR_MAX))
        avahi_address_snprint(&text, text.count, address)
        let printed = text.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        let service = ResolvedService(instance: instance, hostName: host.map { String(cString: $0) } ?? "", address: printed,
                                      port: port, txt: ResolvedService.txt(from: txt))
        guard resolved[instance] != service else { return }
        resolved[instance] = service
        handler(.found(service))
    }
}
