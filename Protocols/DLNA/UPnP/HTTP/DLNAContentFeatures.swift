/// The `contentFeatures.dlna.org` values the media server sends (DLNA guidelines 7.4.1.3.x, the
/// fourth field of a protocolInfo). Renderers read them to decide whether they may seek (send
/// Range) and how to pace the transfer; a TV that sees no flags often refuses a live stream.
///
/// `DLNA.ORG_OP` is two digits: the first is time-seek (`TimeSeekRange.dlna.org`), the second
/// byte-seek (HTTP Range). `DLNA.ORG_CI=0`: not transcoded. `DLNA.ORG_FLAGS` is 32 hex digits:
/// 8 of primary flags, then 24 reserved zeros. The primary flag bits (from the most significant):
///
///     bit 31  sp-flag          sender paced: the server is the clock (RTP-like broadcast)
///     bit 30  lop-npt          limited time-seek range only
///     bit 29  lop-bytes        limited byte-seek range only
///     bit 28  playcontainer    DLNA playlist container
///     bit 27  s0-increasing    the start of the content moves forward (old data is dropped)
///     bit 26  sn-increasing    the end of the content grows while it is served
///     bit 25  rtsp-pause
///     bit 24  tm-s             Streaming transfer mode (render while receiving, in real time)
///     bit 23  tm-i             Interactive transfer mode (images, documents)
///     bit 22  tm-b             Background transfer mode (download, no real-time need)
///     bit 21  http-stalling    the client may pause by not reading; the server waits
///     bit 20  dlna-v1.5        these flags are DLNA 1.5 flags (else they are ignored)
enum DLNAContentFeatures {
    /// A file: Range supported (OP=01); streaming and background transfer, stalling allowed
    /// (it is just a file, we can wait), DLNA 1.5: 0x01700000.
    static let file = "DLNA.ORG_OP=01;DLNA.ORG_CI=0;DLNA.ORG_FLAGS=01700000000000000000000000000000"

    /// A live stream: no seeking at all (OP=00); s0- and sn-increasing (a window that moves: old
    /// audio is gone, new audio keeps coming), streaming and background transfer, DLNA 1.5:
    /// 0x0D500000, as Music Assistant sends for its live streams. No http-stalling: a renderer
    /// that stops reading falls behind a live source rather than pausing it. No sp-flag: the
    /// renderer keeps its own clock and reads at its pace (sender pacing asks it to lock onto ours,
    /// which many renderers do not implement).
    static let liveStream = "DLNA.ORG_OP=00;DLNA.ORG_CI=0;DLNA.ORG_FLAGS=0D500000000000000000000000000000"
}
