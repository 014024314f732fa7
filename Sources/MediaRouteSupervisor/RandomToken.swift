/// Secrets and tokens: 32 bytes from the kernel's CSPRNG (Swift's system generator is `getrandom`
/// on Linux), in lowercase hex. Push credentials, push-to-start tokens, session push tokens, the
/// names of artwork files.
enum RandomToken {
    static func make() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<4).map { _ in
            let word = generator.next() as UInt64
            let hex = String(word, radix: 16)
            return String(repeating: "0", count: 16 - hex.count) + hex
        }.joined()
    }

    /// Whether `a` and `b` are equal, in a time that depends only on their lengths: tokens and
    /// credentials are compared so, giving nothing away by how soon a guess differs.
    static func same(_ a: some StringProtocol, _ b: some StringProtocol) -> Bool {
        let a = Array(a.utf8), b = Array(b.utf8)
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }
}
