import ArgumentParser
import CLinuxHelpers
import Foundation
import MediaRouteIPC
import PrivateDaemons

/// The README's demo: a reference receiver, mediarouted with the reference driver, and the
/// operator's CLI and the example app using them, as a transcript. Everything it starts it stops.
@main
struct MediarouteDemo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mediaroute-demo",
        abstract: "Discover, pair, play, change volume and exchange data with a MediaRoute receiver, printing what happens.",
        discussion: """
        Uses the machine's Avahi daemon when one answers on the system bus; otherwise (as root) a private \
        dbus-daemon and avahi-daemon in a network namespace of their own, which never multicast on the \
        machine's interfaces.
        """)

    @Flag(help: "Use a private Avahi in a network namespace even when the machine's own answers (root only): nothing is announced on your network.")
    var privateAvahi = false

    func run() async throws {
        clh_line_buffer_stdout()
        let started = ContinuousClock.now
        let demo = try Demo(privateAvahi: privateAvahi)
        let signals = try SignalPipe([SIGINT, SIGTERM])
        // Whichever comes first: the demo's end, or Ctrl-C. Either way, everything is cleaned up.
        let result: Result<Void, DemoFailure> = await withCheckedContinuation { continuation in
            let once = ResumeOnce(continuation)
            Task {
                do { try await demo.run(); once.resume(.success(())) } catch let failure as DemoFailure { once.resume(.failure(failure)) } catch {
                    once.resume(.failure(DemoFailure(step: "the demo", reason: "\(error)")))
                }
            }
            Task {
                guard let number = await signals.next() else { return }
                once.resume(.failure(DemoFailure(step: "the demo", reason: "interrupted by signal \(number)")))
            }
        }
        await demo.cleanUp()
        let elapsed = ContinuousClock.now - started
        switch result {
        case .success:
            print("\nDemo finished in \(String(format: "%.1f", elapsed.seconds)) s; everything it started is stopped.")
        case .failure(let failure):
            print("\nDEMO FAILED at \(failure.step): \(failure.reason)")
            throw ExitCode(1)
        }
    }
}

/// Which step of the demo failed, and why.
struct DemoFailure: Error, Sendable {
    let step: String
    let reason: String
}

/// Resumes a continuation with the first result offered, and ignores the rest.
final class ResumeOnce<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<T, Never>?
    init(_ continuation: CheckedContinuation<T, Never>) { self.continuation = continuation }
    func resume(_ value: T) {
        let pending = lock.withLock { () -> CheckedContinuation<T, Never>? in
            defer { continuation = nil }
            return continuation
        }
        pending?.resume(returning: value)
    }
}
