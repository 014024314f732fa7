import COpenSSL

/// One stream's AES-128-CBC: an OpenSSL cipher context made once and restarted from the session IV
/// for each packet, encrypting in place. Not shared between threads: each stream's sending thread
/// makes its own.
final class AESCBCEncryptor {
    private let context: OpaquePointer
    private let iv: [UInt8]

    init(_ encryption: RAOPEncryption) throws(RAOPError) {
        guard let context = EVP_CIPHER_CTX_new() else { throw RAOPError(.encryptionFailed, "OpenSSL could not make an AES cipher context") }
        guard EVP_EncryptInit_ex(context, EVP_aes_128_cbc(), nil, encryption.key, encryption.iv) == 1, EVP_CIPHER_CTX_set_padding(context, 0) == 1 else {
            EVP_CIPHER_CTX_free(context)
            throw RAOPError(.encryptionFailed, "OpenSSL refused the stream's AES-128-CBC key")
        }
        self.context = context
        iv = encryption.iv
    }

    deinit { EVP_CIPHER_CTX_free(context) }

    /// Encrypts the whole 16-byte blocks of `bytes` in place, CBC from the session IV; the partial
    /// block at the end stays clear.
    func encryptWholeBlocks(_ bytes: UnsafeMutableRawBufferPointer) throws(RAOPError) {
        let whole = bytes.count / 16 * 16
        guard whole > 0, let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return }
        var written: Int32 = 0
        guard EVP_EncryptInit_ex(context, nil, nil, nil, iv) == 1, EVP_EncryptUpdate(context, base, &written, base, Int32(whole)) == 1, written == whole else {
            throw RAOPError(.encryptionFailed, "AES-128-CBC refused a packet of \(bytes.count) bytes")
        }
    }
}
