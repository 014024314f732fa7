import COpenSSL
import Foundation

/// The encryption of an `et=1` stream: a fresh AES-128 key and IV per session, the key wrapped with
/// RSA-OAEP (SHA-1) under the AirPort Express public key for the ANNOUNCE, and each packet's audio
/// in AES-128-CBC from that IV, over whole 16-byte blocks only: RAOP leaves the trailing partial
/// block in the clear, and receivers decrypt exactly so.
///
/// OpenSSL (libcrypto) does both: the same library as the C baseline the stream is measured
/// against, and its cipher context is set up once per stream and reused for every packet, in
/// place, where a one-shot API allocates per packet.
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
        wrappedKeyBase64 = Self.base64(try Self.wrap(key, modulus: AirPortExpressKey.modulus, exponent: AirPortExpressKey.exponent))
    }

    /// `payload` with its whole 16-byte blocks encrypted (CBC from the session IV) and the rest as is.
    public func encrypt(_ payload: [UInt8]) throws(RAOPError) -> [UInt8] {
        let cipher = try AESCBCEncryptor(self)
        var bytes = payload
        let failure = bytes.withUnsafeMutableBytes { buffer -> RAOPError? in
            do throws(RAOPError) { try cipher.encryptWholeBlocks(buffer) } catch { return error }
            return nil
        }
        if let failure { throw failure }
        return bytes
    }

    /// RSA-OAEP (SHA-1, MGF1) of `key` under the public key (`modulus`, `exponent`).
    private static func wrap(_ key: [UInt8], modulus: [UInt8], exponent: [UInt8]) throws(RAOPError) -> [UInt8] {
        func failure(_ step: String) -> RAOPError {
            RAOPError(.encryptionFailed, "cannot wrap the AES key under the AirPort Express key: OpenSSL failed to \(step) (\(openSSLError()))")
        }
        let n = BN_bin2bn(modulus, Int32(modulus.count), nil), e = BN_bin2bn(exponent, Int32(exponent.count), nil)
        let builder = OSSL_PARAM_BLD_new()
        defer {
            BN_free(n)
            BN_free(e)
            OSSL_PARAM_BLD_free(builder)
        }
        guard let n, let e, let builder, OSSL_PARAM_BLD_push_BN(builder, COPENSSL_RSA_N, n) == 1, OSSL_PARAM_BLD_push_BN(builder, COPENSSL_RSA_E, e) == 1,
              let parameters = OSSL_PARAM_BLD_to_param(builder) else { throw failure("read the key's numbers") }
        defer { OSSL_PARAM_free(parameters) }
        let making = EVP_PKEY_CTX_new_from_name(nil, "RSA", nil)
        defer { EVP_PKEY_CTX_free(making) }
        var publicKey: OpaquePointer?
        guard EVP_PKEY_fromdata_init(making) == 1, EVP_PKEY_fromdata(making, &publicKey, COPENSSL_PKEY_PUBLIC_KEY, parameters) == 1 else {
            throw failure("make an RSA public key of them")
        }
        defer { EVP_PKEY_free(publicKey) }
        let encrypting = EVP_PKEY_CTX_new_from_pkey(nil, publicKey, nil)
        defer { EVP_PKEY_CTX_free(encrypting) }
        var length = 0
        guard EVP_PKEY_encrypt_init(encrypting) == 1, EVP_PKEY_CTX_set_rsa_padding(encrypting, RSA_PKCS1_OAEP_PADDING) == 1,
              EVP_PKEY_encrypt(encrypting, nil, &length, key, key.count) == 1 else { throw failure("set up RSA-OAEP") }
        var wrapped = [UInt8](repeating: 0, count: length)
        guard EVP_PKEY_encrypt(encrypting, &wrapped, &length, key, key.count) == 1 else { throw failure("encrypt with RSA-OAEP") }
        return Array(wrapped[..<length])
    }

    /// OpenSSL's last error as its own sentence, and its queue emptied.
    private static func openSSLError() -> String {
        let code = ERR_get_error()
        defer { ERR_clear_error() }
        guard code != 0 else { return "no reason given" }
        var text = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &text, text.count)
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Base64 without the trailing `=`, as iTunes writes keys in SDP.
    static func base64(_ bytes: [UInt8]) -> String {
        var text = Data(bytes).base64EncodedString()
        while text.hasSuffix("=") { text.removeLast() }
        return text
    }
}
