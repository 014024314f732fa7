import Foundation

/// One block of `IPC/Vectors/*.txt`: a name, what it expects (for invalid frames), and the bytes.
struct GoldenVector: CustomTestStringConvertible, Sendable {
    let name: String
    let expect: String?
    let bytes: [UInt8]
    var testDescription: String { name }

    static func load(_ file: String) -> [GoldenVector] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../IPC/Vectors/\(file)").standardized
        guard let text = try? String(contentsOf: url, encoding: .utf8) else { return [] }
        var vectors: [GoldenVector] = []
        var name: String?, expect: String?, hex = ""
        func finish() {
            if let name { vectors.append(GoldenVector(name: name, expect: expect, bytes: Self.bytes(fromHex: hex))) }
            name = nil; expect = nil; hex = ""
        }
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("== ") {
                finish()
                name = String(line.dropFirst(3))
            } else if line.hasPrefix("expect: ") {
                expect = String(line.dropFirst(8))
            } else if !line.hasPrefix("#") {
                hex += line.filter { !$0.isWhitespace }
            }
        }
        finish()
        return vectors
    }

    private static func bytes(fromHex hex: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex, let next = hex.index(index, offsetBy: 2, limitedBy: hex.endIndex) {
            bytes.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return bytes
    }
}

import Testing
