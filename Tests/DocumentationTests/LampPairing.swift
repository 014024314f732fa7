import Foundation
import MediaDevice

// Pairing for "Writing a driver": the token a lamp hands out for a right code, kept in the
// driver's state directory so that the next activation needs no code.

extension LampDriver {
    func pairingToken(for device: MediaOutputDevice) -> String? {
        try? String(contentsOfFile: tokenPath(device), encoding: .utf8)
    }

    func savePairingToken(_ token: String, for device: MediaOutputDevice) {
        try? token.write(toFile: tokenPath(device), atomically: true, encoding: .utf8)
    }

    func tokenPath(_ device: MediaOutputDevice) -> String {
        routingManager.stateDirectory + "/" + device.id + ".token"
    }

    /// Stands in for the lamp's own pairing exchange: a token for the right code, nil otherwise.
    func lampAccepts(_ code: String) -> String? {
        code == "4321" ? UUID().uuidString : nil
    }
}
