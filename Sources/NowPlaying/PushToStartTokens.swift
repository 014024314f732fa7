import AVSystemRouting
import Foundation
import MediaRouteWire
import Synchronization

/// The app's push-to-start token: asked of mediarouted once, then kept and followed as the
/// operator rotates it.
final class PushToStartTokens: Sendable {
    private struct Known {
        weak var controller: AVSystemRouteController?
        let tokens: PushToStartTokens
    }
    private static let known = Mutex<[Known]>([])

    /// The tokens of the app that `controller` connects as (one app per controller).
    static func of(_ controller: AVSystemRouteController) -> PushToStartTokens {
        known.withLock { known in
            known.removeAll { $0.controller == nil }
            if let found = known.first(where: { $0.controller === controller }) { return found.tokens }
            let made = PushToStartTokens()
            known.append(Known(controller: controller, tokens: made))
            return made
        }
    }

    private struct State {
        var token: Data?
        var asking = false
        var watchers: [UUID: AsyncStream<Data>.Continuation] = [:]
    }
    private let state = Mutex(State())

    func current(controller: AVSystemRouteController) -> Data? {
        ask(controller)
        return state.withLock { $0.token }
    }

    func updates(controller: AVSystemRouteController) -> AsyncStream<Data> {
        let (stream, continuation) = AsyncStream<Data>.makeStream()
        let id = UUID()
        let known = state.withLock { state in
            state.watchers[id] = continuation
            return state.token
        }
        continuation.onTermination = { [weak self] _ in self?.state.withLock { _ = $0.watchers.removeValue(forKey: id) } }
        if let known { continuation.yield(known) }
        ask(controller)
        return stream
    }

    /// Asks mediarouted once (again after a failure), and follows the changes it announces.
    private func ask(_ controller: AVSystemRouteController) {
        let start = state.withLock { state in
            defer { state.asking = true }
            return state.token == nil && !state.asking
        }
        guard start else { return }
        let changes = controller.pushToStartTokenChanges()
        Task {
            do {
                let token = try await controller.request(App.PushToStartToken())
                take(token.token)
            } catch {
                state.withLock { $0.asking = false }
                return
            }
            for await token in changes { take(token) }
        }
    }

    private func take(_ hex: String) {
        guard let token = Data(hex: hex) else { return }
        let watchers = state.withLock { state in
            guard state.token != token else { return [AsyncStream<Data>.Continuation]() }
            state.token = token
            return Array(state.watchers.values)
        }
        for watcher in watchers { watcher.yield(token) }
    }
}
