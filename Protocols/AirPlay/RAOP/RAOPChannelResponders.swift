import NIOCore
import Synchronization

/// Answers the receiver's timing requests (0xd2) on the sender's timing port, on the event loop
/// that reads them, so the answer leaves within microseconds of the request.
final class RAOPTimingResponder: ChannelInboundHandler, Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    typealias OutboundOut = AddressedEnvelope<ByteBuffer>

    /// How many requests were answered: a receiver that never asks never syncs.
    let answered = Atomic<Int>(0)

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let received = NTPTimestamp.now()
        let envelope = unwrapInboundIn(data)
        guard let reply = RAOPTimingPacket.reply(to: Array(envelope.data.readableBytesView), received: received) else { return }
        answered.add(1, ordering: .relaxed)
        let buffer = context.channel.allocator.buffer(bytes: reply)
        context.writeAndFlush(wrapOutboundOut(AddressedEnvelope(remoteAddress: envelope.remoteAddress, data: buffer)), promise: nil)
    }
}

/// Answers the receiver's resend requests (0xd5) on the control port from the packet history:
/// each packet still held goes back wrapped as 0xd6, to where the request came from.
final class RAOPResendResponder: ChannelInboundHandler, Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    typealias OutboundOut = AddressedEnvelope<ByteBuffer>

    /// At most this many packets per request: a request for more is a confused or hostile receiver.
    static let maximumPerRequest = 256
    let history: PacketHistory
    /// Packets resent, and packets asked for that were no longer held.
    let resent = Atomic<Int>(0)
    let missed = Atomic<Int>(0)

    init(history: PacketHistory) { self.history = history }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        guard case let .resendRequest(first, count)? = RAOPControlPacket.parseResendRequest(Array(envelope.data.readableBytesView)) else { return }
        for offset in 0..<min(Int(count), Self.maximumPerRequest) {
            guard let packet = history.packet(first &+ UInt16(offset)) else {
                missed.add(1, ordering: .relaxed)
                continue
            }
            resent.add(1, ordering: .relaxed)
            let buffer = context.channel.allocator.buffer(bytes: RAOPControlPacket.resentAudio(packet: packet).bytes)
            context.write(wrapOutboundOut(AddressedEnvelope(remoteAddress: envelope.remoteAddress, data: buffer)), promise: nil)
        }
        context.flush()
    }
}
