import Foundation
import MediaRouteWire

/// The operator's decisions (disabled drivers, preferred protocols) and the file that keeps them.
final class OperatorBook {
    private(set) var state = OperatorState()
    let path: String

    init(stateDirectory: String) { path = (stateDirectory as NSString).appendingPathComponent("state.json") }

    func load() throws { state = try OperatorState.load(from: path) }

    func isDisabled(_ protocolID: String) -> Bool { state.disabledDrivers.contains(protocolID) }

    /// Applies a change and writes it through; an error names the file.
    func change(_ body: (inout OperatorState) -> Void) throws(MediaDeviceError) {
        body(&state)
        do { try state.save(to: path) } catch {
            throw MediaDeviceError(.driverFailed, "cannot save the operator state to \(path): \(error)")
        }
    }
}
