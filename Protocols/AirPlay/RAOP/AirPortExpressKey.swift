import Foundation

/// The RSA public key of the AirPort Express family (2048 bits, exponent 65537), under which every
/// AirPlay 1 receiver that takes `et=1` expects the stream's AES key. It is public knowledge: the
/// modulus has been published since 2004 and every open RAOP implementation carries it.
enum AirPortExpressKey {
    static let modulus: [UInt8] = Array(Data(base64Encoded:
        "59dE8qLieItsH1WgjrcFRKj6eUWqi+bGLOX1HL3U3GhC/j0Qg90u3sG/1CUtwC5vOYvfDmFI6oSFXi5ELabWJmT2dKHzBJKa3k9ok+8t9ucRqMd6DZHJ2YCCLlDRKSKv6kDqnw4U"
        + "wPdpOMXziC/AMj3Z/lUVX1G7WSHCAWKf1zNS1eLvqr+boEjXuBOitnZ/bDzPHrTOZz0Dew0uowxf/+sG+NCK3eQJVxqcaJ/vEHKIVd2M+5qL71yJQ+87X6oV3eaYvt3zWZYD"
        + "6z5vYTcrtij2VZ9Zmni/UAaHqn9JdsBWLUEpVviYnhimNVvYFZeCXg/IdTQ+x4IRdiXNv5hEew==") ?? Data())
    static let exponent: [UInt8] = [0x01, 0x00, 0x01]
}
