import MediaRouteIPC

/// An app's methods on the supervisor's socket (IPC/README.md §11.4): only routes of the protocols
/// it declared, only its own sessions.
package enum App {
    package struct Routes: WireRequest {
        package typealias Result = Control.Routes
        package static let method = "app.routes"
        package init() {}
    }

    package struct StartSession: WireRequest {
        package enum Mode: String, Codable, Sendable { case application, player }
        package typealias Result = RouteDescription
        package static let method = "app.session.start"
        package let route: String
        package let url: String
        package let mode: Mode
        package let application: String?
        package init(route: String, url: String, mode: Mode, application: String?) { (self.route, self.url, self.mode, self.application) = (route, url, mode, application) }
    }

    package struct StopSession: WireRequest {
        package typealias Result = NoResult
        package static let method = "app.session.stop"
        package let session: String
        package init(session: String) { self.session = session }
    }

    package struct SetPlayback: WireRequest {
        package typealias Result = RouteDescription
        package static let method = "app.playback.set"
        package let session: String
        package let changes: PlaybackChanges
        package init(session: String, changes: PlaybackChanges) { (self.session, self.changes) = (session, changes) }
    }

    /// To a route's data channel (from the app's identifier) or a session's (to its application).
    package struct SendData: WireRequest {
        package typealias Result = NoResult
        package static let method = "app.data.send"
        package let route: String?
        package let session: String?
        package let data: Base64Payload
        package init(route: String?, session: String?, data: Base64Payload) { (self.route, self.session, self.data) = (route, session, data) }
    }
}

/// What the supervisor tells an app, in the order things happened (§11.4).
package enum ToApp {
    package struct RouteActivated: WireNotification {
        package static let method = "route.activated"
        package let route: RouteDescription
        package init(route: RouteDescription) { self.route = route }
    }

    package struct RouteDeactivated: WireNotification {
        package enum Reason: String, Codable, Sendable { case newDeviceAvailable, oldDeviceUnavailable, override, routeConfigurationChange }
        package static let method = "route.deactivated"
        package let route: RouteDescription
        package let reason: Reason
        package let message: String
        package init(route: RouteDescription, reason: Reason, message: String) { (self.route, self.reason, self.message) = (route, reason, message) }
    }

    package struct RouteUpdated: WireNotification {
        package static let method = "route.updated"
        package let route: RouteDescription
        package init(route: RouteDescription) { self.route = route }
    }

    package struct SessionState: WireNotification {
        package static let method = "session.state"
        package let session: String
        package let state: SessionPlayback
        package init(session: String, state: SessionPlayback) { (self.session, self.state) = (session, state) }
    }

    package struct SessionEnded: WireNotification {
        package static let method = "session.ended"
        package let session: String
        package let state: SessionPlayback
        package let error: MediaDeviceError
        package init(session: String, state: SessionPlayback, error: MediaDeviceError) { (self.session, self.state, self.error) = (session, state, error) }
    }

    /// A button on the device, for the apps whose sample streams play on the route.
    package struct RemoteCommand: WireNotification {
        package static let method = "route.remoteCommand"
        package let route: String
        package let command: MediaRemoteCommand
        package init(route: String, command: MediaRemoteCommand) { (self.route, self.command) = (route, command) }
    }

    package struct DataReceived: WireNotification {
        package static let method = "data.received"
        package let route: String
        /// Set for a session's channel; absent for the route's.
        package let session: String?
        package let application: String
        package let data: Base64Payload
        package init(route: String, session: String?, application: String, data: Base64Payload) {
            (self.route, self.session, self.application, self.data) = (route, session, application, data)
        }
    }
}

/// Sample streams, for apps and the operator alike (§11.5).
package enum Streams {
    /// Answered with the ring's memfd and eventfd as descriptors `memory` and `wakeup`.
    package struct Start: WireRequest {
        package struct Opened: Codable, Sendable {
            package let stream: String
            package let route: String
            package let format: SampleFormat
            package let memory: Int
            package let wakeup: Int
            /// Seconds from a write to the sound leaving the device, when its driver says.
            package let latency: Double?
            package init(stream: String, route: String, format: SampleFormat, latency: Double? = nil) {
                (self.stream, self.route, self.format, self.memory, self.wakeup, self.latency) = (stream, route, format, 0, 1, latency)
            }
        }
        package typealias Result = Opened
        package static let method = "stream.start"
        package let route: String
        package let format: SampleFormat
        package init(route: String, format: SampleFormat) { (self.route, self.format) = (route, format) }
    }

    package struct Stop: WireRequest {
        package typealias Result = NoResult
        package static let method = "stream.stop"
        package let stream: String
        package init(stream: String) { self.stream = stream }
    }

    package struct Ended: WireNotification {
        package static let method = "stream.ended"
        package let stream: String
        package let error: MediaDeviceError
        package init(stream: String, error: MediaDeviceError) { (self.stream, self.error) = (stream, error) }
    }
}

/// Who an app says it is in `hello.identity` (§11.4).
package struct AppHelloIdentity: Codable, Sendable {
    package let name: String
    package let applicationIdentifier: String?
    package let supportedProtocols: [String]?

    package init(name: String, applicationIdentifier: String, supportedProtocols: [String]) {
        (self.name, self.applicationIdentifier, self.supportedProtocols) = (name, applicationIdentifier, supportedProtocols)
    }

    package var object: JSONObject { WireEncoder.encode(self).objectValue ?? [:] }

    package init(_ identity: JSONObject) throws(RPCError) {
        do { self = try WireDecoder.decode(Self.self, from: .object(identity)) } catch {
            throw RPCError(.invalidParams, "hello: identity: \(error)")
        }
    }
}
