import COpenSSL

/// RTSP Digest authentication (RFC 2617 with MD5, no qop) as AirPlay receivers with `pw=true` ask
/// for it: the challenge from a 401's `WWW-Authenticate`, and the `Authorization` header each
/// later request carries. The user name is "iTunes", as every receiver expects.
public struct DigestAuthentication: Sendable, Equatable {
    public let realm: String
    public let nonce: String
    public let username: String

    /// Reads `Digest realm="...", nonce="..."`; nil if the header is not a usable Digest challenge.
    public init?(challenge: String, username: String = "iTunes") {
        let text = challenge.trimmingSpaces
        guard text.lowercased().hasPrefix("digest ") else { return nil }
        var parameters: [String: String] = [:]
        for part in text.dropFirst(7).split(separator: ",") {
            guard let equals = part.firstIndex(of: "=") else { continue }
            let name = String(part[..<equals]).trimmingSpaces.lowercased()
            var value = String(part[part.index(after: equals)...]).trimmingSpaces
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
            parameters[name] = value
        }
        guard let realm = parameters["realm"], let nonce = parameters["nonce"], !nonce.isEmpty,
              !(realm + nonce).utf8.contains(where: { $0 == 34 || $0 == 13 || $0 == 10 }) else { return nil }
        self.realm = realm
        self.nonce = nonce
        self.username = username
    }

    /// The `Authorization` header value for `method` on `uri` with `password`.
    public func authorization(method: String, uri: String, password: String) throws(RAOPError) -> String {
        let secret = try Self.md5Hex("\(username):\(realm):\(password)")
        let request = try Self.md5Hex("\(method):\(uri)")
        let response = try Self.md5Hex("\(secret):\(nonce):\(request)")
        return "Digest username=\"\(username)\", realm=\"\(realm)\", nonce=\"\(nonce)\", uri=\"\(uri)\", response=\"\(response)\""
    }

    /// Lower-case hex, as RFC 2617 (and shairport-sync, which compares exactly) has it.
    static func md5Hex(_ text: String) throws(RAOPError) -> String {
        let bytes = Array(text.utf8)
        var digest = [UInt8](repeating: 0, count: 16)
        var length: UInt32 = 0
        // A libcrypto without MD5 (a FIPS-only one) cannot answer: said as such, not as a wrong password.
        guard EVP_Digest(bytes, bytes.count, &digest, &length, EVP_md5(), nil) == 1 else {
            throw RAOPError(.encryptionFailed, "this system's libcrypto has no MD5, which AirPlay password authentication needs")
        }
        let digits = Array("0123456789abcdef")
        return String(digest[..<Int(length)].flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0x0f)]] })
    }
}
