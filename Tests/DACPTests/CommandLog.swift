import DACP
import Synchronization

/// What a server reported, in order: the commands, and the refusals (for the log), plus a stream
/// of the commands for tests that wait for them.
final class CommandLog: Sendable {
    private let state = Mutex<(commands: [DACPCommand], refusals: [DACPError])>(([], []))
    let stream: AsyncStream<DACPCommand>
    private let continuation: AsyncStream<DACPCommand>.Continuation

    init() {
        (stream, continuation) = AsyncStream.makeStream(of: DACPCommand.self, bufferingPolicy: .unbounded)
    }

    var commands: [DACPCommand] { state.withLock { $0.commands } }
    var refusals: [DACPError] { state.withLock { $0.refusals } }

    func record(_ command: DACPCommand) {
        state.withLock { $0.commands.append(command) }
        continuation.yield(command)
    }

    func refused(_ error: DACPError) { state.withLock { $0.refusals.append(error) } }

    func finish() { continuation.finish() }
}

/// The next `count` elements of `stream`, or none if `limit` passes first.
func next<Element: Sendable>(_ count: Int, of stream: AsyncStream<Element>, within limit: Duration) async -> [Element] {
    await withTaskGroup(of: [Element]?.self) { group in
        group.addTask {
            var received: [Element] = []
            for await command in stream {
                received.append(command)
                if received.count == count { break }
            }
            return received
        }
        group.addTask {
            try? await Task.sleep(for: limit)
            return nil
        }
        let first = await group.next()!
        group.cancelAll()
        return first ?? []
    }
}
