/// What an `RAOPSender` needs to know about the receiver and itself.
public struct RAOPSenderConfiguration: Sendable {
    public var host: String
    public var port: Int
    /// The receiver's password (`pw=true`), nil if it has none.
    public var password: String?
    /// Encrypt the audio (`et=1`): required by AirPort Express and Apple TVs, optional for shairport-sync.
    public var encrypted: Bool
    public var userAgent: String
    /// How long each RTSP request may take.
    public var requestTimeout: Duration
    /// The latency the sync packets announce, in frames: the receiver plays a frame this long after
    /// it is due (iTunes' 77,175 frames, 1.75 s, which receivers add their own 11,025 to).
    public var latencyFrames: UInt32
    /// The silence the sender puts before each stream and each resume, in frames (rounded up to
    /// whole packets): see `RAOPSender` for why. 0 sends none.
    public var leadInFrames: Int
    /// The `DACP-ID` header: 16 upper-case hex digits naming this sender's remote-control service
    /// (`iTunes_Ctrl_<DACP-ID>` in `_dacp._tcp`), which the receiver sends its buttons to.
    public var dacpID: String
    /// The `Active-Remote` header: a decimal 32-bit token the receiver puts on every DACP request.
    public var activeRemote: String

    public init(host: String, port: Int = 5000, password: String? = nil, encrypted: Bool = false, userAgent: String = "MediaRoute/1.0",
                requestTimeout: Duration = .seconds(5), latencyFrames: UInt32 = 77175, leadInFrames: Int = 11025,
                dacpID: String = RAOPSenderConfiguration.randomDACPID(), activeRemote: String = String(UInt32.random(in: 1 ... .max))) {
        self.host = host
        self.port = port
        self.password = password
        self.encrypted = encrypted
        self.userAgent = userAgent
        self.requestTimeout = requestTimeout
        self.latencyFrames = latencyFrames
        self.leadInFrames = max(0, leadInFrames)
        self.dacpID = dacpID
        self.activeRemote = activeRemote
    }

    /// A random 64-bit id as 16 upper-case hex digits, as senders make their DACP-ID, never with a
    /// leading zero: shairport-sync 3.3.8 drops leading zeros from the `iTunes_Ctrl_` name it finds
    /// but not from the header, so it would never match such an id and its remote would reach nobody.
    public static func randomDACPID() -> String {
        String(UInt64.random(in: 0x1000_0000_0000_0000 ... .max), radix: 16, uppercase: true)
    }
}
