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
    /// Problems worth a line in the log (an interface we cannot use, port 1900 unavailable).
    public let problems: AsyncStream<String>
    private let announced: AsyncStream<SSDPAnnouncement>.Continuation
    private let reported: AsyncStream<String>.Continuation
    private let group: any EventLoopGroup
    private let state = Mutex(State())

    private struct State {
        var listener: (any Channel)?
        var listenerFailed = false
        /// Interfaces the listener joined the group on, by "name address".
        var joined: Set<String> = []
        /// One search socket per interface, by "name address".
        var searchers: [String: any Channel] = [:]
        var closed = false
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
        (problems, reported) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(64))
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
        for (key, channel) in known where channel.isActive && !sent.contains(key) { send(targets, mx: mx, on: channel) }
        // Each loop runs what was given to it in order: once these run, the searches are written.
        for channel in known.values where channel.isActive { _ = try? await channel.eventLoop.submit {}.get() }
        let devices = Self.interfaces()
        await listen(on: devices)
        var used: [String] = []
        for device in devices {
            let key = Self.key(device)
            if let channel = known[key], channel.isActive {
                used.append(key)
            } else if let channel = await searcher(for: device) {
                send(targets, mx: mx, on: channel)
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
        for (key, channel) in known where channel.isActive {
            send(targets, mx: mx, on: channel)
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
    private func send(_ targets: [String], mx: Int, on channel: any Channel) {
        guard let destination = try? SocketAddress(ipAddress: UPnP.multicastGroup, port: UPnP.ssdpPort) else { return }
        let datagrams = targets.map { SSDPMessage.search(for: $0, mx: mx) }
        let write: @Sendable (ArraySlice<[UInt8]>) -> Void = { datagrams in
            for datagram in datagrams {
                channel.writeAndFlush(AddressedEnvelope(remoteAddress: destination, data: channel.allocator.buffer(bytes: datagram)), promise: nil)
            }
        }
        write(datagrams.prefix(1))
        channel.eventLoop.scheduleTask(in: Self.repeatAfter) { if channel.isActive { write(datagrams[...]) } }
    }

    /// Stops listening and searching; the streams finish.
    public func close() async {
        let channels: [any Channel] = state.withLock { state in
            state.closed = true
            defer { state.listener = nil; state.searchers = [:] }
            return Array(state.searchers.values) + (state.listener.map { [$0] } ?? [])
        }
        for channel in channels { try? await channel.close() }
        announced.finish()
        reported.finish()
    }

    private static func key(_ device: NIONetworkDevice) -> String { "\(device.name) \(device.address?.ipAddress ?? "?")" }

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
            } catch {
                reported.yield("cannot join the SSDP group on \(Self.key(device)): \(error)")
            }
        }
    }

    /// The search socket of an interface, bound to its address with multicast leaving through it.
    private func searcher(for device: NIONetworkDevice) async -> (any Channel)? {
        let key = Self.key(device)
        if let channel = state.withLock({ $0.searchers[key] }), channel.isActive { return channel }
        guard case .v4(let address)? = device.address, let ip = device.address?.ipAddress else { return nil }
        do {
            let channel = try await bootstrap().bind(host: ip, port: 0).get()
            if let options = channel as? any SocketOptionProvider {
                try await options.setIPMulticastIF(address.address.sin_addr).get()
            }
            let kept = state.withLock { state -> Bool in
                guard !state.closed else { return false }
                state.searchers[key] = channel
                return true
            }
            guard kept else { try? await channel.close(); return nil }
            return channel
        } catch {
            reported.yield("cannot search for renderers on \(key): \(error)")
            return nil
        }
    }
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
