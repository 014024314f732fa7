import Foundation
import ScreenCapture

/// What a region of an X display shows, for tests that compare a window's picture with the one
/// sent: as BGRX pixels, or as an I420 frame (nearest pixel), as mirroring captures it.
enum ScreenPicture {
    /// The BGRX pixels of a region of `display` (all of it without `region`), and the region's size.
    static func pixels(of display: String, x: Int = 0, y: Int = 0, region: (width: Int, height: Int)? = nil) throws -> (pixels: Data, width: Int, height: Int) {
        let grabber = try X11ScreenGrabber(display: display)
        defer { grabber.close() }
        let region = region ?? (grabber.width, grabber.height)
        let pixels = try grabber.grab { screen in
            var cropped = Data(count: region.width * region.height * 4)
            cropped.withUnsafeMutableBytes { out in
                for row in 0..<region.height {
                    let from = ((y + row) * grabber.width + x) * 4
                    out.baseAddress!.advanced(by: row * region.width * 4).copyMemory(from: screen.baseAddress!.advanced(by: from), byteCount: region.width * 4)
                }
            }
            return cropped
        }
        return (pixels, region.width, region.height)
    }

    /// A region of `display` as an I420 frame of `width`x`height`.
    static func frame(of display: String, x: Int = 0, y: Int = 0, region: (width: Int, height: Int)? = nil, width: Int, height: Int) throws -> Data {
        let grabbed = try pixels(of: display, x: x, y: y, region: region)
        return i420(grabbed.pixels, sourceWidth: grabbed.width, sourceHeight: grabbed.height, width: width, height: height)
    }

    /// BGRX pixels of `sourceWidth`x`sourceHeight` as an I420 frame of `width`x`height`.
    static func i420(_ pixels: Data, sourceWidth: Int, sourceHeight: Int, width: Int, height: Int) -> Data {
        let scaler = RGB32ToI420Scaler(sourceWidth: sourceWidth, sourceHeight: sourceHeight, width: width, height: height)
        var frame = Data(count: scaler.frameBytes)
        pixels.withUnsafeBytes { screen in frame.withUnsafeMutableBytes { scaler.convert(screen, into: $0) } }
        return frame
    }
}

/// Whether process `pid` has ended: reaped, or a zombie whose parent is not `parent` (an orphan
/// waiting for init). A zombie of `parent`'s own has not ended for this question: `parent` failed to reap it.
func processHasEnded(_ pid: Int32, parent: Int32) -> Bool {
    if kill(pid, 0) != 0 && errno == ESRCH { return true }
    let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
    let fields = stat.split(separator: ")").last?.split(separator: " ") ?? []
    return stat.isEmpty || (fields.first == "Z" && fields.count > 1 && Int32(fields[1]) != parent)
}
