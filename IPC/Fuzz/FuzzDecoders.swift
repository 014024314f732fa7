/// libFuzzer entry point over the IPC decoders: the input is a byte stream cut into frames, each
/// frame read as JSON and as a JSON-RPC message, each message re-encoded and read back.
/// Built and run by `IPC/Fuzz/run-fuzzer.sh`; any crash or failed invariant is a finding.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDecoders(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    var decoder = FrameDecoder(maximumFrameLength: 1 << 16)
    decoder.append(UnsafeRawBufferPointer(bytes))
    while true {
        guard let frame = try? decoder.nextFrame() else { break }
        guard let message = try? Message.decode(frame) else { continue }
        // Invariant: whatever we accept, we re-encode into something we read back as the same message.
        let again = try? Message.decode(message.encode())
        if again != message { fatalError("re-encoding changed the message: \(message)") }
    }
    // Invariant: the same bytes fed one at a time give the same frames.
    var single = FrameDecoder(maximumFrameLength: 1 << 16)
    var whole = FrameDecoder(maximumFrameLength: 1 << 16)
    whole.append(UnsafeRawBufferPointer(bytes))
    for byte in bytes { single.append(CollectionOfOne(byte)) }
    while true {
        let a = Result { try whole.nextFrame() }, b = Result { try single.nextFrame() }
        switch (a, b) {
        case (.success(let x?), .success(let y?)) where Array(x) == Array(y): continue
        case (.success(nil), .success(nil)), (.failure, .failure): return 0
        default: fatalError("one-byte feeding diverged from whole feeding")
        }
    }
}
