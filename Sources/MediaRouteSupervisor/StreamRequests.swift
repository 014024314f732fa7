import Glibc
import MediaDevice
import MediaRouteIPC

/// `stream.start` and `stream.stop` (IPC/README.md §11.5), for apps and the operator alike: the
/// answer to `stream.start` carries the ring's memfd and eventfd; the opener writes samples into it.
enum StreamRequests {
    static func register(in handlers: inout RPCHandlers, client: ControlClient, context: ControlContext) {
        let supervisor = context.supervisor
        handlers.answer(Streams.Start.self) { request, _ in
            let requester: Requester = client.app.withLock { $0 }.map { .app($0) } ?? .operator
            let (opened, ring) = try await supervisor.startStream(on: try nonEmpty(request.route, "route"), format: request.format, owner: client.id,
                                                                  by: requester)
            // The reply owns (and closes) what it carries; the ring closes its own when it goes.
            let descriptors = [fcntl(ring.memoryFD, F_DUPFD_CLOEXEC, 0), fcntl(ring.wakeupFD, F_DUPFD_CLOEXEC, 0)]
            guard !descriptors.contains(-1) else {
                descriptors.filter { $0 >= 0 }.forEach { close($0) }
                try? await supervisor.stopStream(opened.stream, owner: client.id)
                throw MediaDeviceError(.sessionFailed, "cannot pass the sample ring: out of file descriptors")
            }
            return (opened, descriptors)
        }
        handlers.answer(Streams.Stop.self) { request, _ in
            try await supervisor.stopStream(try nonEmpty(request.stream, "stream"), owner: client.id)
            return NoResult()
        }
    }
}
