import Glibc
import MediaDevice
import MediaRouteIPC

/// `stream.start` and `stream.stop` (IPC/README.md §11.5), for apps and the operator alike: the
/// answer to `stream.start` carries the ring's memfd and eventfd; the opener writes samples into it.
enum StreamRequests {
    static func register(in handlers: inout RPCHandlers, client: ControlClient, context: ControlContext) {
        let supervisor = context.supervisor
        handlers.on("stream.start", replying: { request in
            let params = request.params
            let format = try SampleFormat(json: params["format"])
            let stream = try await supervisor.startStream(on: try params.requiredString("route"), format: format, owner: client.id,
                                                          app: client.app.withLock { $0 })
            // The reply owns (and closes) what it carries; the ring closes its own when it goes.
            let descriptors = [fcntl(stream.ring.memoryFD, F_DUPFD_CLOEXEC, 0), fcntl(stream.ring.wakeupFD, F_DUPFD_CLOEXEC, 0)]
            guard !descriptors.contains(-1) else {
                descriptors.filter { $0 >= 0 }.forEach { close($0) }
                try? await supervisor.stopStream(stream.id, owner: client.id)
                throw MediaDeviceError(.sessionFailed, "cannot pass the sample ring: out of file descriptors")
            }
            var result = stream.description.objectValue ?? [:]
            result["memory"] = 0
            result["wakeup"] = 1
            return RPCReply(.object(result), descriptors: descriptors)
        })
        handlers.on("stream.stop") { request in
            try await supervisor.stopStream(try request.params.requiredString("stream"), owner: client.id)
            return .null
        }
    }
}
