import DBus

/// Our `org.bluez.Agent1`: BlueZ asks it for codes and confirmations while a device pairs, and it
/// asks the person through the activation that started the pairing.
///
/// What BlueZ asks, and what the person sees (the mapping README.md documents):
/// - `RequestPasskey` (the device shows a 6-digit passkey): a 6-digit code prompt.
/// - `RequestPinCode` (legacy pairing, often 0000 or 1234): a password prompt, the PIN as typed.
/// - `RequestConfirmation` (both sides show the same number): a 6-digit code prompt naming the
///   number; typing it confirms, anything else rejects.
/// - `DisplayPasskey` / `DisplayPinCode` (the person types our number on the device): a prompt
///   naming the number; the answer only says "go on" (cancelling cancels the pairing).
/// - `RequestAuthorization` / `AuthorizeService`: granted only to the device being activated.
@MainActor
final class PairingAgent {
    enum Request: Equatable {
        case passkey
        case pinCode
        case confirmation(passkey: UInt32)
        case display(code: String)
    }

    /// Asks the person; nil when they cancelled or nobody is activating that device (then the
    /// request is refused).
    var ask: (_ device: DBusObjectPath, _ request: Request) async -> String? = { _, _ in nil }
    /// Whether a device may pair or connect to a profile now: only the one being activated.
    var isActivating: (_ device: DBusObjectPath) -> Bool = { _ in false }
    /// BlueZ withdrew its request (timeout, the device gave up).
    var cancelled: () -> Void = {}

    nonisolated static let capability = "KeyboardDisplay"

    nonisolated func interface() -> DBusInterface {
        let o = DBusArgument("device", "o")
        return DBusInterface(BlueZ.agent, methods: [
            DBusMethod("Release") { _ throws(DBusError) in [] },
            DBusMethod("RequestPinCode", inputs: [o], outputs: [DBusArgument("pincode", "s")]) { call throws(DBusError) in
                let pin = try await self.answer(call, .pinCode)
                guard (1...16).contains(pin.utf8.count) else { throw Self.rejected("a PIN is 1 to 16 characters") }
                return [.string(pin)]
            },
            DBusMethod("RequestPasskey", inputs: [o], outputs: [DBusArgument("passkey", "u")]) { call throws(DBusError) in
                let code = try await self.answer(call, .passkey)
                guard code.count == 6, let passkey = UInt32(code) else { throw Self.rejected("a passkey is 6 digits") }
                return [.uint32(passkey)]
            },
            DBusMethod("DisplayPasskey", inputs: [o, DBusArgument("passkey", "u"), DBusArgument("entered", "q")]) { call throws(DBusError) in
                // Called again as the person types on the device (`entered` grows): ask once.
                guard call.arguments.count == 3, call.arguments[2].uint16 == 0, let passkey = call.arguments[1].uint32 else { return [] }
                _ = try await self.answer(call, .display(code: Self.sixDigits(passkey)))
                return []
            },
            DBusMethod("DisplayPinCode", inputs: [o, DBusArgument("pincode", "s")]) { call throws(DBusError) in
                _ = try await self.answer(call, .display(code: call.arguments.last?.string ?? ""))
                return []
            },
            DBusMethod("RequestConfirmation", inputs: [o, DBusArgument("passkey", "u")]) { call throws(DBusError) in
                guard let passkey = call.arguments.last?.uint32 else { throw DBusError.invalidArguments("RequestConfirmation needs a passkey") }
                let typed = try await self.answer(call, .confirmation(passkey: passkey))
                guard typed == Self.sixDigits(passkey) else { throw Self.rejected("the number typed was not the one shown") }
                return []
            },
            DBusMethod("RequestAuthorization", inputs: [o]) { call throws(DBusError) in try await self.authorize(call) },
            DBusMethod("AuthorizeService", inputs: [o, DBusArgument("uuid", "s")]) { call throws(DBusError) in try await self.authorize(call) },
            DBusMethod("Cancel") { _ throws(DBusError) in
                await MainActor.run { self.cancelled() }
                return []
            },
        ])
    }

    private nonisolated func answer(_ call: DBusMethodCall, _ request: Request) async throws(DBusError) -> String {
        guard let device = call.arguments.first?.objectPath else { throw DBusError.invalidArguments("\(call.member) needs a device path") }
        guard let answer = await person(device, request) else {
            throw DBusError(name: BlueZ.Error.canceled, message: "the person cancelled pairing")
        }
        return answer
    }

    private nonisolated func authorize(_ call: DBusMethodCall) async throws(DBusError) -> [DBusValue] {
        guard let device = call.arguments.first?.objectPath, await mayConnect(device) else {
            throw Self.rejected("only a device being activated through MediaRoute is authorized")
        }
        return []
    }

    private func person(_ device: DBusObjectPath, _ request: Request) async -> String? { await ask(device, request) }
    private func mayConnect(_ device: DBusObjectPath) -> Bool { isActivating(device) }

    private nonisolated static func rejected(_ why: String) -> DBusError { DBusError(name: BlueZ.Error.rejected, message: why) }
    nonisolated static func sixDigits(_ passkey: UInt32) -> String {
        let digits = String(passkey % 1_000_000)
        return String(repeating: "0", count: 6 - digits.count) + digits
    }
}
