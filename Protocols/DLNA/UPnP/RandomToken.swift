/// 128 random bits as 32 hex digits: paths (media, event callbacks) nobody else on the LAN can guess.
public enum RandomToken {
    public static func make() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<2).map { _ in
            let hex = String(generator.next() as UInt64, radix: 16)
            return String(repeating: "0", count: 16 - hex.count) + hex
        }.joined()
    }
}
