import MediaRouteIPC

/// The operator's methods on the supervisor's socket (IPC/README.md §11.3). A device is named by
/// its picker name, its id, or the session id of its route.
package enum Control {
    package struct Status: WireRequest {
        package struct Report: Codable, Sendable {
            package let pid: Int32
            package let uptimeSeconds: Int
            package let socket: String
            package let drivers: [DriverReport]
            package let routes: [RouteDescription]
            package let recentEvents: [String]
            /// Where the push endpoint listens (`HOST:PORT`); absent when it does not.
            package let pushAddress: String?
            package init(pid: Int32, uptimeSeconds: Int, socket: String, drivers: [DriverReport], routes: [RouteDescription], recentEvents: [String],
                         pushAddress: String? = nil) {
                (self.pid, self.uptimeSeconds, self.socket, self.drivers, self.routes, self.recentEvents) = (pid, uptimeSeconds, socket, drivers, routes, recentEvents)
                self.pushAddress = pushAddress
            }
        }
        package typealias Result = Report
        package static let method = "status"
        package init() {}
    }

    package struct Drivers: Codable, Sendable {
        package let drivers: [DriverReport]
        package init(drivers: [DriverReport]) { self.drivers = drivers }
    }

    package struct ListDrivers: WireRequest {
        package typealias Result = Drivers
        package static let method = "drivers.list"
        package init() {}
    }

    package struct Routes: Codable, Sendable {
        package let routes: [RouteDescription]
        package init(routes: [RouteDescription]) { self.routes = routes }
    }

    package struct ListRoutes: WireRequest {
        package typealias Result = Routes
        package static let method = "routes.list"
        package init() {}
    }

    /// Opens a picker: discovery runs until it closes; `PickerChanged` follows each change.
    package struct OpenPicker: WireRequest {
        package struct Opened: Codable, Sendable {
            package let picker: Int
            package let entries: [PickerLine]
            package init(picker: Int, entries: [PickerLine]) { (self.picker, self.entries) = (picker, entries) }
        }
        package typealias Result = Opened
        package static let method = "picker.open"
        package init() {}
    }

    /// The whole list again, coalesced to at most one per 10 ms.
    package struct PickerChanged: WireNotification {
        package static let method = "picker.changed"
        package let picker: Int
        package let entries: [PickerLine]
        package init(picker: Int, entries: [PickerLine]) { (self.picker, self.entries) = (picker, entries) }
    }

    package struct ClosePicker: WireRequest {
        package typealias Result = NoResult
        package static let method = "picker.close"
        package let picker: Int
        package init(picker: Int) { self.picker = picker }
    }

    package struct Activate: WireRequest {
        package typealias Result = RouteDescription
        package static let method = "device.activate"
        package let device: String
        package let `protocol`: String?
        package init(device: String, protocol: String?) { (self.device, self.protocol) = (device, `protocol`) }
    }

    /// Asked of whoever started an activation when the device wants a code or password.
    package struct PairingRequest: WireRequest {
        package struct Answer: Codable, Sendable {
            /// nil: the person cancelled (sent as `null`, never left out: §11.3 says "string or null").
            package let code: String?
            package init(code: String?) { self.code = code }

            private enum Keys: String, CodingKey { case code }
            package func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: Keys.self)
                if let code { try container.encode(code, forKey: .code) } else { try container.encodeNil(forKey: .code) }
            }
        }
        package typealias Result = Answer
        package static let method = "pairing.request"
        package let device: String
        package let protocolName: String
        /// The driver's sentence for the person (shown once, as the prompt's explanation), if it gave one.
        package let reason: String?
        package let authorizationMethod: MediaOutputDevice.AuthorizationMethod
        package init(device: String, protocolName: String, reason: String?, authorizationMethod: MediaOutputDevice.AuthorizationMethod) {
            (self.device, self.protocolName, self.reason, self.authorizationMethod) = (device, protocolName, reason, authorizationMethod)
        }
    }

    package struct Deactivate: WireRequest {
        package typealias Result = NoResult
        package static let method = "device.deactivate"
        package let device: String
        package init(device: String) { self.device = device }
    }

    package struct Prefer: WireRequest {
        package typealias Result = NoResult
        package static let method = "device.prefer"
        package let device: String
        package let `protocol`: String
        package init(device: String, protocol: String) { (self.device, self.protocol) = (device, `protocol`) }
    }

    /// Gives a device a nickname shown and accepted in place of its own name; nil gives it its own name back.
    package struct Rename: WireRequest {
        package typealias Result = NoResult
        package static let method = "device.rename"
        package let device: String
        package let name: String?
        package init(device: String, name: String?) { (self.device, self.name) = (device, name) }

        private enum Keys: String, CodingKey { case device, name }
        /// `name` is sent as `null` to clear, never left out.
        package func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(device, forKey: .device)
            if let name { try container.encode(name, forKey: .name) } else { try container.encodeNil(forKey: .name) }
        }
    }

    package struct StartSession: WireRequest {
        package typealias Result = RouteDescription
        package static let method = "session.start"
        package let device: String
        package let url: String
        package let application: String?
        package init(device: String, url: String, application: String?) { (self.device, self.url, self.application) = (device, url, application) }
    }

    package struct SetPlayback: WireRequest {
        package typealias Result = RouteDescription
        package static let method = "playback.set"
        package let device: String
        package let changes: PlaybackChanges
        package init(device: String, changes: PlaybackChanges) { (self.device, self.changes) = (device, changes) }
    }

    package struct StopSession: WireRequest {
        package typealias Result = NoResult
        package static let method = "session.stop"
        package let device: String
        package init(device: String) { self.device = device }
    }

    package struct Volume: WireRequest {
        package enum Action: String, Codable, Sendable { case get, set, change, mute, unmute }
        package typealias Result = RouteDescription
        package static let method = "volume"
        package let device: String
        package let action: Action?
        /// `set`: the level from 0 to 1, carried as the person gave it; `change`: whole steps.
        package let value: Double?
        package init(device: String, action: Action, value: Double? = nil) { (self.device, self.action, self.value) = (device, action, value) }
    }

    package struct RestartDriver: WireRequest {
        package typealias Result = NoResult
        package static let method = "driver.restart"
        package let `protocol`: String
        package init(protocol: String) { self.protocol = `protocol` }
    }

    package struct EnableDriver: WireRequest {
        package typealias Result = NoResult
        package static let method = "driver.enable"
        package let `protocol`: String
        package init(protocol: String) { self.protocol = `protocol` }
    }

    package struct DisableDriver: WireRequest {
        package typealias Result = NoResult
        package static let method = "driver.disable"
        package let `protocol`: String
        package init(protocol: String) { self.protocol = `protocol` }
    }
}
