import CLinuxHelpers
import MediaRouteIPC
import Synchronization

/// Hands the heap's free pages back to the kernel a moment after clients leave. glibc keeps what
/// a burst of short-lived connections used (3,000 clients left 33 MB behind) until it is asked, so
/// the daemon asks once things are quiet: at most once a second, never on a busy path.
final class HeapTrim: Sendable {
    private let loop: EventLoop
    private let scheduled = Atomic<Bool>(false)

    init(loop: EventLoop) { self.loop = loop }

    func soon() {
        guard !scheduled.exchange(true, ordering: .relaxed) else { return }
        loop.execute { [self] in
            _ = loop.schedule(after: .seconds(1)) { [self] in
                scheduled.store(false, ordering: .relaxed)
                clh_release_free_memory()
            }
        }
    }
}
