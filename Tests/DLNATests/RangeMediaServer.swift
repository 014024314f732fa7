/// The media server the renderers fetch test media from: Python's `http.server` with single byte
/// ranges added (the stock one ignores `Range`, and a renderer cannot seek in what it serves).
enum RangeMediaServer {
    static let source = #"""
    import os, re, sys
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    class Handler(SimpleHTTPRequestHandler):
        extensions_map = {**SimpleHTTPRequestHandler.extensions_map, ".wav": "audio/x-wav"}

        def send_head(self):
            self.range = None
            match = re.fullmatch(r"bytes=(\d*)-(\d*)", self.headers.get("Range", ""))
            path = self.translate_path(self.path)
            if not match or not os.path.isfile(path):
                return super().send_head()
            size = os.path.getsize(path)
            first, last = match.group(1), match.group(2)
            start = int(first) if first else max(0, size - int(last or 0))
            end = min(int(last), size - 1) if first and last else size - 1
            if start >= size or start > end:
                self.send_response(416)
                self.send_header("Content-Range", "bytes */%d" % size)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return None
            handle = open(path, "rb")
            handle.seek(start)
            self.range = end - start + 1
            self.send_response(206)
            self.send_header("Content-Type", self.guess_type(path))
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end, size))
            self.send_header("Content-Length", str(self.range))
            self.send_header("Accept-Ranges", "bytes")
            self.end_headers()
            return handle

        def copyfile(self, source, destination):
            try:
                if self.range is None:
                    return super().copyfile(source, destination)
                left = self.range
                while left > 0:
                    chunk = source.read(min(65536, left))
                    if not chunk:
                        break
                    destination.write(chunk)
                    left -= len(chunk)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the renderer seeks by dropping one request and starting another

        def log_message(self, *args):
            pass

    address, port, directory = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    os.chdir(directory)
    ThreadingHTTPServer((address, port), Handler).serve_forever()
    """#
}
