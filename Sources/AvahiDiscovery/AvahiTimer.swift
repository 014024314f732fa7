import CAvahi

/// A one-shot timer on Avahi's thread. Make it and cancel it with the connection's lock held (or
/// from a callback); its owner keeps it, and letting it go cancels it.
final class AvahiTimer {
    private let api: UnsafePointer<AvahiPoll>
    private var timeout: OpaquePointer?
    private let action: () -> Void

    init(on api: UnsafePointer<AvahiPoll>, after milliseconds: UInt32, _ action: @escaping () -> Void) {
        self.api = api
        self.action = action
        var when = timeval()
        avahi_elapse_time(&when, milliseconds, 0)
        timeout = api.pointee.timeout_new(api, &when, { _, context in
            AvahiCallbackScope.run { Unmanaged<AvahiTimer>.fromOpaque(context!).takeUnretainedValue().fire() }
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    deinit { cancel() }

    func cancel() {
        if let timeout { api.pointee.timeout_free(timeout) }
        timeout = nil
    }

    private func fire() {
        cancel()
        action()
    }
}
