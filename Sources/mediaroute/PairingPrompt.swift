import Foundation
import MediaRouteWire
import Synchronization

/// Asks the person for a pairing code or password, on standard input (a terminal, or a pipe from a
/// script that reads the code off the device). Ctrl-C or the end of input cancels the pairing (the
/// driver is told the person cancelled) instead of killing the CLI mid-activation.
enum PairingPrompt {
    private static let refused = Mutex<String?>(nil)
    /// Why a --code given in advance was not sent (the device asks for something else), if it was not.
    static var refusal: String? { refused.withLock { $0 } }

    /// Why `code` cannot be what `method` asks for, or nil. A code of the wrong form is never sent:
    /// the device would count it as a wrong try, and a few of those lock pairing for minutes.
    static func problem(with code: String, for method: MediaOutputDevice.AuthorizationMethod, device: String) -> String? {
        switch method {
        case .numericCode(let length):
            let digits = length.rawValue
            guard code.count == digits, code.allSatisfy({ ("0"..."9").contains($0) }) else {
                return "\(device) asks for a \(digits)-digit code; \"\(code)\" is not \(digits) digits"
            }
        case .password:
            guard !code.isEmpty else { return "\(device) asks for a password, and it cannot be empty" }
        case .none:
            break
        }
        return nil
    }

    /// The driver's reason, if it gave one, once, as the explanation (it is the request, in the
    /// device's words), then only what to type and where: the person does not read the request twice.
    static func prompt(for request: Control.PairingRequest) -> String {
        let field = switch request.authorizationMethod {
        case .numericCode(let length): "\(length.rawValue)-digit code for \(request.device)"
        case .password: "Password for \(request.device)"
        case .none: "Code for \(request.device)"
        }
        let reason = request.reason?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        return (reason.isEmpty ? "" : reason + "\n") + field + " (Ctrl-C cancels): "
    }

    static func answer(_ request: Control.PairingRequest, code: String?) async -> String? {
        let method = request.authorizationMethod
        if let code {
            if let problem = problem(with: code, for: method, device: request.device) {
                refused.withLock { $0 = "--code: \(problem); nothing was sent to it" }
                return nil
            }
            return code
        }
        guard let interrupt = try? Interrupt() else {
            FileHandle.standardError.write(Data("cannot watch for Ctrl-C while asking for the code; pass it with --code\n".utf8))
            return nil
        }
        // Only now ask: a Ctrl-C typed the moment the prompt shows is already heard.
        FileHandle.standardError.write(Data(prompt(for: request).utf8))
        defer { interrupt.restore() }
        while true {
            let line = await interrupt.readLine()
            guard let line, !line.isEmpty else {
                FileHandle.standardError.write(Data((line == nil && isatty(STDIN_FILENO) == 0
                    ? "\nno code on standard input; type it at a terminal, pipe it in, or pass --code\n" : "\npairing cancelled\n").utf8))
                return nil
            }
            guard let problem = problem(with: line, for: method, device: request.device) else { return line }
            // A typo is not a wrong try: say so and ask again.
            FileHandle.standardError.write(Data("\(problem); try again (Ctrl-C cancels): ".utf8))
        }
    }
}
