/// Where `JSONWriter` and `Message.encode` put bytes: an array for callers, or a connection's
/// `OutgoingBytes`, which appends without an array's per-call uniqueness and capacity bookkeeping.
protocol JSONOutput {
    mutating func write(_ byte: UInt8)
    mutating func write(_ bytes: UnsafeBufferPointer<UInt8>)
}

extension Array: JSONOutput where Element == UInt8 {
    mutating func write(_ byte: UInt8) { append(byte) }
    mutating func write(_ bytes: UnsafeBufferPointer<UInt8>) { append(contentsOf: bytes) }
}
