import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// SSDP on every IPv4 interface that can multicast: searches sent from a socket per interface
/// (answers come back to it), and the devices' own `NOTIFY`s heard on port 1900, which we share
/// with other listeners on the host (SO_REUSEADDR: every member of the group gets each datagram).
/// Interfaces are looked at again on every search, so a network that comes up later is searched
/// too (control points that only look at start-up miss renderers forever).
public final class SSDPDiscovery: Sendable {
    /// Everything heard: answers to our searches, alive and byebye notifications.
    public let announcements: AsyncStream<SSDPAnnouncement>
    /// Lines for the log: problems (an interface we cannot use, port 1900 unavailable), and each
    /// interface the listener joins the SSDP group on.
    public let logLines: AsyncStream<String>
    private let announced: AsyncStream<SSDPAnnouncement>.Continuation
    private let reported: AsyncStream<String>.Continuation
    private let group: any EventLoopGroup
    private let state = Mutex(State())

    private struct State {
        var listener: (any Channel)?
        var listenerFailed = false
        /// Interfaces the listener joined the group on, by `key`.
        var joined: Set<String> = []
        /// One search socket per interface, by `key`.
        var searchers: [String: Searcher] = [:]
        var closed = false
    }

    /// A search socket: NIO reads the answers from it, and searches are sent through a duplicate
    /// of its descriptor from the caller's thread (a picker's first search went out a wake-up of
    /// the loop's thread later, on a small machine 50-100 µs while the person waits).
    private struct Searcher: Sendable {
        let channel: any Channel
        let sender: SearchSender
        var isActive: Bool { channel.isActive }
    }

    /// Takes each announcement on the event loop that read it, instead of `announcements`.
    private let handler: (@Sendable (SSDPAnnouncement) -> Void)?

    /// `handler`, if given, takes each announcement on the event loop that read it (it must not
    /// block), and `announcements` stays empty: work that goes on from there (fetching a
    /// description) starts without waking another thread.
    public init(group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton, handler: (@Sendable (SSDPAnnouncement) -> Void)? = nil) {
        self.group = group
        self.handler = handler
        (announcements, announced) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1024))
        (logLines, reported) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(64))
    }

    /// The interfaces SSDP runs on: IPv4, multicast-capable, not loopback.
    public static func interfaces() -> [NIONetworkDevice] {
        ((try? System.enumerateDevices()) ?? []).filter { device in
            guard device.multicastSupported, let address = device.address, case .v4 = address else { return false }
            return !(address.ipAddress?.hasPrefix("127.") ?? true)
        }
    }

    /// Sends `M-SEARCH` for each target on every interface (twice, as UDP may drop one), opening
    /// sockets for interfaces that appeared since the last search. Returns the interfaces used.
    /// The interfaces searched before go first, unless `searchKnown` searched them already (pass
    /// what it returned as `sent`); the others are listed only once those searches are out:
    /// listing them costs a fifth of a millisecond, and on a busy machine the sending thread
    /// waited for it while the person waited for the answers.
    @discardableResult
    public func search(for targets: [String], mx: Int = 1, sent: Set<String> = []) async -> [String] {
        let known = state.withLock { $0.closed ? [:] : $0.searchers }
        for (key, searcher) in known where searcher.isActive && !sent.contains(key) { send(targets, mx: mx, on: searcher) }
        let devices = Self.interfaces()
        await forget(allBut: Set(devices.map(Self.key)))
        await listen(on: devices)
        var used: [String] = []
        for device in devices {
            let key = Self.key(device)
            if let searcher = known[key], searcher.isActive {
                used.append(key)
            } else if let searcher = await searcher(for: device) {
                send(targets, mx: mx, on: searcher)
                used.append(key)
            }
        }
        return used
    }

    /// Sends `M-SEARCH` at once, from the caller's thread, on the interfaces searched before, and
    /// returns them, for `search(for:mx:sent:)` to look for new ones: a picker's first search
    /// goes out without waiting for a task to start.
    public func searchKnown(for targets: [String], mx: Int = 1) -> Set<String> {
        let known = state.withLock { $0.closed ? [:] : $0.searchers }
        var sent: Set<String> = []
        for (key, searcher) in known where searcher.isActive {
            send(targets, mx: mx, on: searcher)
            sent.insert(key)
        }
        return sent
    }

    /// Each search goes twice, as UDP may drop one: the second a little later, as losses come in
    /// bursts, and so that the renderers' second answers do not arrive (and are not read) while
    /// the first ones' descriptions are being fetched.
    static let repeatAfter = TimeAmount.milliseconds(50)

    /// The first target (the lowest version of a type) goes at once, the others with the repeat:
    /// a device answers a search for an earlier version of its type (UDA 1.1: its answer names
    /// the version searched for), so one datagram finds them all, and each renderer answers one
    /// search at first, not one per version. The repeat asks for every target, for devices that
    /// answer their own version only.
    private func send(_ targets: [String], mx: Int, on searcher: Searcher) {
        let datagrams = targets.map { SSDPMessage.search(for: $0, mx: mx) }
        let sender = searcher.sender
        sender.send(datagrams.prefix(1))
        searcher.channel.eventLoop.scheduleTask(in: Self.repeatAfter) { sender.send(datagrams[...]) }
    }

    /// Stops listening and searching; the streams finish.
    public func close() async {
        let (searchers, listener) = state.withLock { state in
            state.closed = true
            defer { state.listener = nil; state.searchers = [:] }
            return (Array(state.searchers.values), state.listener)
        }
        for searcher in searchers { await retire(searcher) }
        try? await listener?.close()
        announced.finish()
        reported.finish()
    }

    /// "name#index address": an interface made again under the same name and address (an adapter
    /// plugged back in, a bridge rebuilt) has a new index, and the group is joined on it anew (the
    /// kernel dropped the membership with the old one).
    private static func key(_ device: NIONetworkDevice) -> String { "\(device.name)#\(device.interfaceIndex) \(device.address?.ipAddress ?? "?")" }

    /// Forgets the interfaces no longer there: their memberships (gone with them) and their search
    /// sockets (closed).
    private func forget(allBut listed: Set<String>) async {
        let gone = state.withLock { state -> [Searcher] in
            state.joined.formIntersection(listed)
            let keys = state.searchers.keys.filter { !listed.contains($0) }
            return keys.compactMap { state.searchers.removeValue(forKey: $0) }
        }
        for searcher in gone { await retire(searcher) }
    }

    private func received(_ bytes: [UInt8], from sender: SocketAddress) {
        guard let message = SSDPMessage(bytes), let address = sender.ipAddress,
              let announcement = SSDPAnnouncement(message, sender: address) else { return }
        if let handler { handler(announcement) } else { announced.yield(announcement) }
    }

    private func bootstrap() -> DatagramBootstrap {
        let received: @Sendable ([UInt8], SocketAddress) -> Void = { [weak self] bytes, sender in self?.received(bytes, from: sender) }
        return DatagramBootstrap(group: group)
            .channelOption(.socketOption(.so_reuseaddr), value: 1)
            // One byte past the longest message taken: a longer one arrives too long and is refused,
            // not cut to a prefix that could parse (NIO reads 2,048 bytes by default).
            .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: SSDPMessage.maximumLength + 1))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(DatagramReader(received))
                }
            }
    }

    /// Binds port 1900 once, and joins the group on interfaces not joined yet.
    private func listen(on devices: [NIONetworkDevice]) async {
        var listener = state.withLock { $0.closed || $0.listenerFailed ? nil : $0.listener }
        if listener == nil, !state.withLock({ $0.closed || $0.listenerFailed }) {
            do {
                let channel = try await bootstrap().bind(host: "0.0.0.0", port: UPnP.ssdpPort).get()
                let kept = state.withLock { state -> Bool in
                    guard !state.closed else { return false }
                    state.listener = channel
                    return true
                }
                guard kept else { try? await channel.close(); return }
                listener = channel
            } catch {
                state.withLock { $0.listenerFailed = true }
                reported.yield("cannot listen for SSDP notifications on port \(UPnP.ssdpPort) (\(error)): renderers are found by searching only, and their departures by expiry")
                return
            }
        }
        guard let multicast = listener as? any MulticastChannel, let group = try? SocketAddress(ipAddress: UPnP.multicastGroup, port: UPnP.ssdpPort) else { return }
        for device in devices where !state.withLock({ $0.joined.contains(Self.key(device)) }) {
            do {
                try await multicast.joinGroup(group, device: device).get()
                state.withLock { _ = $0.joined.insert(Self.key(device)) }
                reported.yield("listening for SSDP announcements on \(Self.key(device))")
            } catch let error as IOError where error.errnoCode == EADDRINUSE {
                // Joined already: the interface has a new address, not a new index.
                state.withLock { _ = $0.joined.insert(Self.key(device)) }
            } catch {
                reported.yield("cannot join the SSDP group on \(Self.key(device)): \(error)")
            }
        }
    }

    /// The search socket of an interface, bound to its address with multicast leaving through it:
    /// made here and handed to NIO, which reads it, while its duplicate sends.
    private func searcher(for device: NIONetworkDevice) async -> Searcher? {
        let key = Self.key(device)
        let old = state.withLock { $0.searchers[key] }
        if let old, old.isActive { return old }
        guard case .v4(let address)? = device.address else { return nil }
        let made: Searcher
        do {
            let socket = try Self.searchSocket(on: address.address)
            let duplicate = fcntl(socket, F_DUPFD_CLOEXEC, 0)
            guard duplicate >= 0 else {
                let error = errno
                Glibc.close(socket)
                throw IOError(errnoCode: error, reason: "dup")
            }
            let sender = SearchSender(duplicate)
            do {
                made = Searcher(channel: try await bootstrap().withBoundSocket(socket).get(), sender: sender)
            } catch {
                // NIO owns `socket` from here (its adoption fails only on a bad descriptor).
                sender.close()
                throw error
            }
        } catch {
            reported.yield("cannot search for renderers on \(key): \(error)")
            return nil
        }
        // Kept unless discovery closed, or another search put its own in meanwhile (a picker
        // reopened while the last search still ran): then that one is used and this one retired.
        let (kept, current) = state.withLock { state -> (Bool, Searcher?) in
            guard !state.closed else { return (false, nil) }
            let current = state.searchers[key]
            guard current?.channel === old?.channel else { return (false, current) }
            state.searchers[key] = made
            return (true, made)
        }
        if kept, let old { await retire(old) }
        if !kept { await retire(made) }
        return current
    }

    /// A UDP socket bound to `address` (any port), SO_REUSEADDR, multicast leaving through it.
    private static func searchSocket(on address: sockaddr_in) throws -> Int32 {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard socket >= 0 else { throw IOError(errnoCode: errno, reason: "socket") }
        var bound = address
        bound.sin_port = 0
        var on: Int32 = 1
        var interface = address.sin_addr
        let failed: String? = if setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size)) != 0 {
            "setsockopt(SO_REUSEADDR)"
        } else if withUnsafePointer(to: &bound, { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }) != 0 {
            "bind"
        } else if setsockopt(socket, Int32(IPPROTO_IP), IP_MULTICAST_IF, &interface, socklen_t(MemoryLayout<in_addr>.size)) != 0 {
            "setsockopt(IP_MULTICAST_IF)"
        } else {
            nil
        }
        if let failed {
            let error = errno
            Glibc.close(socket)
            throw IOError(errnoCode: error, reason: failed)
        }
        return socket
    }

    /// Closes a search socket: NIO's descriptor with the channel, and the sending duplicate.
    private func retire(_ searcher: Searcher) async {
        try? await searcher.channel.close()
        searcher.sender.close()
    }
}

/// The descriptor searches are sent from, closed under a lock: a search sent as its socket is
/// retired goes nowhere, never out of a closed descriptor's number that another socket now has.
private final class SearchSender: Sendable {
    private let descriptor: Mutex<Int32>

    init(_ descriptor: Int32) { self.descriptor = Mutex(descriptor) }

    /// Sends each datagram to SSDP's group; one the socket has no room for is lost, as UDP may
    /// lose it anyway.
    func send(_ datagrams: ArraySlice<[UInt8]>) {
        descriptor.withLock { descriptor in
            guard descriptor >= 0 else { return }
            var group = Self.group
            for datagram in datagrams {
                _ = withUnsafePointer(to: &group) { address in
                    address.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        sendto(descriptor, datagram, datagram.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL), $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
            }
        }
    }

    func close() {
        descriptor.withLock { descriptor in
            if descriptor >= 0 { Glibc.close(descriptor) }
            descriptor = -1
        }
    }

    /// SSDP's multicast group and port.
    private static let group: sockaddr_in = {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(UPnP.ssdpPort).bigEndian
        _ = inet_pton(AF_INET, UPnP.multicastGroup, &address.sin_addr)
        return address
    }()
}

/// Hands each datagram's bytes and sender to a closure.
private final class DatagramReader: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    private let received: @Sendable ([UInt8], SocketAddress) -> Void

    init(_ received: @escaping @Sendable ([UInt8], SocketAddress) -> Void) { self.received = received }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = Self.unwrapInboundIn(data)
        // Searches (ours, looped back to the port-1900 listener, and other control points') say
        // nothing of devices: dropped before they are copied and parsed, ahead of the answers.
        guard !envelope.data.readableBytesView.starts(with: Self.search) else { return }
        received(Array(envelope.data.readableBytesView), envelope.remoteAddress)
    }

    private static let search = Array("M-SEARCH ".utf8)
}
