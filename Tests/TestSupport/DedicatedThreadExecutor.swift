import Dispatch
import Foundation
import Synchronization

/// A task executor with one thread of its own, serving one test (`ThreadOfItsOwnTrait`): what the
/// test runs synchronously (a simulation that computes for seconds, a blocking `poll`) occupies
/// this thread, not one of the cooperative pool's, which has only as many threads as the machine
/// has CPUs and serves every other test running beside it.
final class DedicatedThreadExecutor: TaskExecutor {
    private struct Queue {
        var jobs: [UnownedJob] = []
        var stopping = false
    }
    private let queue = Mutex(Queue())
    /// Signalled once per job queued, and once to stop.
    private let ready = DispatchSemaphore(value: 0)

    init() {
        Thread.detachNewThread { [self] in serve() }
    }

    /// After `stop`, jobs go to the global executor: a task the test left running (`Task {}`
    /// inherits the preference) still runs.
    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let queued = queue.withLock { queue in
            if !queue.stopping { queue.jobs.append(job) }
            return !queue.stopping
        }
        if queued { ready.signal() } else { globalConcurrentExecutor.enqueue(ExecutorJob(job)) }
    }

    /// Ends the thread once the jobs queued before have run.
    func stop() {
        queue.withLock { $0.stopping = true }
        ready.signal()
    }

    private func serve() {
        while true {
            ready.wait()
            guard let job = queue.withLock({ $0.jobs.isEmpty ? nil : $0.jobs.removeFirst() }) else { return }
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
