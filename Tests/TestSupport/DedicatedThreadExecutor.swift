import Dispatch
import Foundation
import Synchronization

/// A task executor with one thread of its own, serving one test (`ThreadOfItsOwnTrait`): what the
/// test runs synchronously (a simulation that computes for seconds, a blocking `poll`) occupies
/// this thread, not one of the cooperative pool's, which has only as many threads as the machine
/// has CPUs and serves every other test running beside it. Only the test's task and its child
/// tasks prefer it (an unstructured `Task {}` does not inherit a preference), and they end with
/// the test: no job comes after `stop`.
final class DedicatedThreadExecutor: TaskExecutor {
    private enum Work { case job(UnownedJob), stop }
    private let queue = Mutex<[Work]>([])
    /// Signalled once per work item queued.
    private let ready = DispatchSemaphore(value: 0)

    init() {
        Thread.detachNewThread { [self] in serve() }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        add(.job(UnownedJob(job)))
    }

    /// Ends the thread once the jobs queued before have run.
    func stop() { add(.stop) }

    private func add(_ work: Work) {
        queue.withLock { $0.append(work) }
        ready.signal()
    }

    private func serve() {
        while true {
            ready.wait()
            switch queue.withLock({ $0.removeFirst() }) {
            case .job(let job): job.runSynchronously(on: asUnownedTaskExecutor())
            case .stop: return
            }
        }
    }
}
