import Crypto
import _CryptoExtras
import Foundation

/// The encryption of an `et=1` stream: a fresh AES-128 key and IV per session, the key wrapped with
/// RSA-OAEP (SHA-1) under the AirPort Express public key for the ANNOUNCE, and each packet's audio
/// in AES-128-CBC from that IV, over whole 16-byte blocks only: RAOP leaves the trailing partial
/// block in the clear, and receivers decrypt exactly so.
public struct RAOPEncryption: Sendable {
    public let key: [UInt8]
    public let iv: [UInt8]
    /// The RSA-OAEP wrapped key, base64 without padding, as the SDP's `a=rsaaeskey` carries it.
    public let wrappedKeyBase64: String
    public var ivBase64: String { Self.base64(iv) }


    /// A new random key and IV.
    public init() throws(RAOPError) {
        try self.init(key: (0..<16).map { _ in UInt8.random(in: .min ... .max) }, iv: (0..<16).map { _ in UInt8.random(in: .min ... .max) })
    }

    /// A given key and IV (16 bytes each), for tests that decrypt.
    public init(key: [UInt8], iv: [UInt8]) throws(RAOPError) {
        guard key.count == 16, iv.count == 16 else { throw RAOPError(.invalidArgument, "an RAOP AES key and IV are 16 bytes each") }
        self.key = key
        self.iv = iv
        do {
            let publicKey = try _RSA.Encryption.PublicKey(n: AirPortExpressKey.modulus, e: AirPortExpressKey.exponent)
            wrappedKeyBase64 = Self.base64(Array(try publicKey.encrypt(key, padding: .PKCS1_OAEP)))
        } catch {
            throw RAOPError(.encryptionFailed, "cannot wrap the AES key under the AirPort Express key: \(error)")
        }
    }

    /// `payload` with its whole 16-byte blocks encrypted (CBC from the session IV) and the rest as is.
    public func encrypt(_ payload: [UInt8]) throws(RAOPError) -> [UInt8] {
        let whole = payload.count / 16 * 16
        guard whole > 0 else { return payload }
        do {
            let encrypted = try AES._CBC.encrypt(payload[..<whole], using: SymmetricKey(data: key), iv: AES._CBC.IV(ivBytes: iv), noPadding: true)
            return Array(encrypted) + payload[whole...]
        } catch {
            throw RAOPError(.encryptionFailed, "AES-128-CBC refused a packet of \(payload.count) bytes: \(error)")
        }
    }

    /// Base64 without the trailing `=`, as iTunes writes keys in SDP.
    static func base64(_ bytes: [UInt8]) -> String {
        var text = Data(bytes).base64EncodedString()
        while text.hasSuffix("=") { text.removeLast() }
        return text
    }
}
