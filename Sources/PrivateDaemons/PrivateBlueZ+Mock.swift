import Foundation

extension PrivateBlueZ {
    /// Calls a method of the stand-in's `org.bluez.Mock` interface with `busctl`, for setting up
    /// adapters and devices without a D-Bus client of one's own: `mock("AddAdapter", ["hci0", "Laptop"])`.
    /// Arguments are written as busctl takes them (an `ay` is its count, then its bytes); the
    /// signature is read from the stand-in's introspection, so it always matches the template.
    /// Returns busctl's rendering of the reply (`s "/org/bluez/hci0"`), empty for none. Descriptors
    /// (`TransportPeer`) cannot travel this way: call those through a D-Bus connection.
    @discardableResult
    public func mock(_ method: String, _ arguments: [String] = []) async throws -> String {
        let signature = try await mockSignature(of: method)
        var call = ["--address=\(busAddress)", "call", "org.bluez", "/", "org.bluez.Mock", method]
        if !signature.isEmpty { call += [signature] + arguments }
        let result = try await CapturedCommand.run(Self.busctl, call, timeout: .seconds(10))
        guard result.succeeded else {
            let why = result.timedOut ? "busctl got no answer within 10 s" : result.output.trimmingCharacters(in: .whitespacesAndNewlines)
            throw PrivateDaemonError("org.bluez.Mock.\(method)(\(signature)) with \(arguments) failed: \(why)")
        }
        return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static let busctl = "/usr/bin/busctl"

    /// The input signature of `method` as the stand-in declares it ("" for none).
    private func mockSignature(of method: String) async throws -> String {
        guard FileManager.default.isExecutableFile(atPath: Self.busctl) else {
            throw PrivateDaemonError("busctl (from systemd) is missing at \(Self.busctl): install systemd, or call org.bluez.Mock over D-Bus")
        }
        let result = try await CapturedCommand.run(Self.busctl, ["--address=\(busAddress)", "introspect", "org.bluez", "/", "org.bluez.Mock"],
                                                   timeout: .seconds(10))
        guard result.succeeded else {
            throw PrivateDaemonError("cannot read the methods of org.bluez.Mock (is the stand-in running?): \(result.output)")
        }
        // Lines read: NAME TYPE SIGNATURE RESULT FLAGS, e.g. ".AddAdapter method ss s -".
        let methods = result.output.split(separator: "\n").compactMap { line -> (String, String)? in
            let columns = line.split(separator: " ", omittingEmptySubsequences: true)
            guard columns.count >= 3, columns[1] == "method", columns[0].hasPrefix(".") else { return nil }
            return (String(columns[0].dropFirst()), columns[2] == "-" ? "" : String(columns[2]))
        }
        guard let signature = methods.first(where: { $0.0 == method })?.1 else {
            throw PrivateDaemonError("org.bluez.Mock has no method \(method); it has \(methods.map(\.0).joined(separator: ", "))")
        }
        return signature
    }
}
