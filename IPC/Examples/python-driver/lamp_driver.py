#!/usr/bin/env python3
"""A MediaRoute driver in Python (standard library only), written from IPC/README.md alone.

Its devices are simulated in this process: a "Lamp Speaker" (absolute volume, mute, real-time
audio from a sample ring, no pairing) and a "Porch Lamp" (relative volume, pairing with a
4-digit code). Everything else is the wire protocol: framing (§2), the JSON-RPC profile (§3), the
hello (§4), descriptors (§5), errors (§6, §8), and the driver methods of §11.2 and §13.
"""

import array
import base64
import ctypes
import fcntl
import json
import mmap
import os
import platform
import select
import signal
import socket
import struct
import sys
import time

PROTOCOL = "org.mediaroute.example.lamp"
MAX_FRAME = 16 * 1024 * 1024          # what this side accepts (§4)
MAX_FDS = 16                          # §5
HANDSHAKE_SECONDS = 5                 # §4
TICK = 0.1                            # how often playback advances and rings are read when nothing else happens
PLAYBACK_STATE_SECONDS = 0.5          # playback.state while a session plays: §11.2 asks for at least every second


def log(text):
    print(f"lamp driver: {text}", file=sys.stderr, flush=True)


class ProtocolError(Exception):
    """A violation by the supervisor: `code` and `message` answer it (§6); `closes` ends the connection (§8)."""
    def __init__(self, code, message, closes=False, id=None):
        super().__init__(message)
        self.code, self.message, self.closes, self.id = code, message, closes, id


class DeviceError(Exception):
    """A media-device error (§11.1), also the JSON-RPC error of a request."""
    def __init__(self, code, message):
        super().__init__(message)
        self.code, self.message = code, message


# ---- §3: JSON, strictly ----

def _no_duplicates(pairs):
    seen = {}
    for key, value in pairs:
        if key in seen:
            raise ValueError(f"duplicate object key \"{key}\"")
        seen[key] = value
    return seen


def _finite(text):
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"the number {text} is outside double range")
    return value


def _reject_constant(name):
    raise ValueError(f"{name} is not JSON")


def _depth(value, level=1):
    if level > 64:
        raise ValueError("nesting deeper than 64 arrays/objects")
    if isinstance(value, dict):
        for item in value.values():
            _depth(item, level + 1)
    elif isinstance(value, list):
        for item in value:
            _depth(item, level + 1)


def parse_body(body):
    """A frame body as a JSON value, or ProtocolError -32700 naming the offset (§3)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ProtocolError(-32700, f"the frame is not UTF-8: invalid byte at offset {error.start}")
    try:
        value = json.loads(text, object_pairs_hook=_no_duplicates, parse_float=_finite, parse_constant=_reject_constant)
        _depth(value)
    except json.JSONDecodeError as error:
        raise ProtocolError(-32700, f"the frame is not JSON: {error.msg} at offset {len(text[:error.pos].encode())}")
    except (ValueError, RecursionError) as error:
        raise ProtocolError(-32700, f"the frame is not JSON we accept: {error}")
    return value


def is_id(value):
    return (isinstance(value, int) and not isinstance(value, bool) and -2**63 <= value < 2**63) or isinstance(value, str)


def message_shape(value):
    """Classifies a JSON value as a §3 message; ProtocolError -32600 otherwise (with the id when readable)."""
    if not isinstance(value, dict):
        raise ProtocolError(-32600, "a message is a JSON object")
    id = value.get("id") if is_id(value.get("id")) else None
    if value.get("jsonrpc") != "2.0":
        raise ProtocolError(-32600, "a message needs \"jsonrpc\": \"2.0\"", id=id)
    fds = value.get("fds", 0)
    if not isinstance(fds, int) or isinstance(fds, bool) or not 0 <= fds <= MAX_FDS:
        # The wrong shape, like any other (§5, §8): answered, not handled, the connection kept. Descriptors
        # that came with the frame are then named by no frame: handle_frames closes for those (-32007).
        raise ProtocolError(-32600, f"\"fds\" must be an integer from 0 to {MAX_FDS}", id=id)
    if "method" in value:
        if not isinstance(value["method"], str) or not value["method"]:
            raise ProtocolError(-32600, "\"method\" must be a non-empty string", id=id)
        if "params" in value and not isinstance(value["params"], dict):
            raise ProtocolError(-32600, f"{value['method']}: \"params\" must be an object", id=id)
        if "id" in value:
            if not is_id(value["id"]):
                raise ProtocolError(-32600, "\"id\" must be an integer or a string")
            return "request", value
        return "notification", value
    if "id" in value and (("result" in value) != ("error" in value)):
        return "response", value
    raise ProtocolError(-32600, "not a request, notification or response", id=id)


# ---- §11.1 values ----

def member(params, name, kind, method, optional=False):
    """params[name] of `kind`; ProtocolError -32602 naming the method and the member otherwise (§6)."""
    if name not in params or (params[name] is None and optional):
        if optional:
            return None
        raise ProtocolError(-32602, f"{method}: \"{name}\" is missing")
    value = params[name]
    kinds = {"string": str, "object": dict, "array": list, "boolean": bool}
    if kind == "number":
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif kind == "integer":
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, kinds[kind])
    if not ok:
        raise ProtocolError(-32602, f"{method}: \"{name}\": expected {'an' if kind[0] in 'aeiou' else 'a'} {kind}, got {json.dumps(value)[:40]}")
    return value


class Device:
    def __init__(self, id, name, capabilities, device_type, volume_control, can_mute, pairing_code=None):
        self.id, self.name = id, name
        self.capabilities, self.device_type = capabilities, device_type
        self.volume_control, self.can_mute = volume_control, can_mute
        self.pairing_code = pairing_code
        self.level, self.muted = 0.5, False
        self.steps = 10                      # a relative device's own level, 0...20

    def json(self):
        return {"id": self.id, "displayName": self.name, "capabilities": self.capabilities, "deviceType": self.device_type,
                "volumeControl": self.volume_control, "canMute": self.can_mute}

    def volume(self):
        return self.steps / 20 if self.volume_control == "relative" else self.level


class Playback:
    """One session's playback on a simulated device: the state of §11.1, advanced by the clock."""
    def __init__(self, url):
        self.url, self.playing, self.position, self.speed = url, True, 0.0, 1.0
        self.volume, self.muted, self.audio = 1.0, False, "English"
        self.last_sent = 0.0

    def advance(self, seconds):
        if self.playing:
            self.position = min(600.0, self.position + seconds * self.speed)

    def state(self):
        return {"isPlaying": self.playing, "state": "playing" if self.playing else "paused", "position": round(self.position, 3),
                "speed": self.speed, "volume": self.volume, "muted": self.muted, "timeRange": [0, 600],
                "audioOptions": ["English"], "selectedAudioOption": self.audio, "subtitleOptions": [],
                "metadata": {"title": "Lamp Glow", "artist": "MediaRoute examples"}}


# ---- §13: sample rings ----

REQUIRED_SEALS = 0x0002 | 0x0004 | 0x0001      # F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL
X86_64 = platform.machine() in ("x86_64", "AMD64")


def _membarrier():
    """A full memory fence for this thread, or None (§13.1): Python has no atomics or fences, but
    membarrier(2) with MEMBARRIER_CMD_PRIVATE_EXPEDITED orders the caller's accesses before the call
    against those after it. Registered once (MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED)."""
    number = {"x86_64": 324, "aarch64": 283}.get(platform.machine())
    if number is None:
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.syscall(number, 16, 0, 0) != 0 or libc.syscall(number, 8, 0, 0) != 0:
            return None
    except (OSError, AttributeError):
        return None
    return lambda: libc.syscall(number, 8, 0, 0)


FENCE = _membarrier()


class Ring:
    """The consumer side of one ring (§13.2). Python has no atomics: the positions are read and written
    whole as aligned 8-byte words through a memoryview (§13.1), and the ordering comes from FENCE:
    - the fence between storing consumer waiting = 1 and loading w once more (wait_fd), without which a
      wakeup can be lost. Without membarrier(2) a lost wakeup is still bounded: run() polls the eventfd
      with a timeout (TICK) and consume() reads the ring at every pass, so records wait at most TICK.
    - acquire after loading w and release before storing r: free on x86-64 (plain loads and stores, issued
      in order by CPython); elsewhere the fence, and without one a ring is refused."""
    def __init__(self, memory_fd, wakeup_fd, kind):
        self.memory_fd, self.wakeup_fd = memory_fd, wakeup_fd
        if FENCE is None and not X86_64:
            raise DeviceError(1006, f"this Python driver orders ring accesses with membarrier(2) on {platform.machine()}, and it is unavailable")
        seals = fcntl.fcntl(memory_fd, getattr(fcntl, "F_GET_SEALS", 1034))
        if seals & REQUIRED_SEALS != REQUIRED_SEALS:
            raise DeviceError(1006, "the ring's memfd is not sealed against shrinking, growing and resealing (§13.1)")
        size = os.fstat(memory_fd).st_size
        if size < 256 + 4096:
            raise DeviceError(1006, f"the ring is {size} bytes, smaller than a header and 4096 bytes of data")
        self.map = mmap.mmap(memory_fd, size)
        self.words = memoryview(self.map).cast("Q")
        magic, version, ring_kind, header = struct.unpack_from("<IIII", self.map, 0)
        self.capacity = struct.unpack_from("<Q", self.map, 16)[0]
        if magic != 0x5253524D or version != 1 or header != 256:
            self.close()
            raise DeviceError(1006, f"the ring's header is not layout 1 (magic {magic:#x}, version {version}, header {header})")
        if self.capacity < 4096 or self.capacity & (self.capacity - 1) or size != 256 + self.capacity:
            self.close()
            raise DeviceError(1006, f"the ring's capacity {self.capacity} is not a power of two ≥ 4096 matching its {size} bytes")
        if ring_kind != {"audio": 1, "video": 2}[kind]:
            self.close()
            raise DeviceError(1006, f"the ring holds kind {ring_kind}, the stream is {kind}")
        self.records = 0

    def word(self, offset):
        return self.words[offset // 8]

    def set_word(self, offset, value):
        self.words[offset // 8] = value

    def consume(self):
        """Reads every record written; returns False when the producer's positions break the rules (§13.2)."""
        read, write = self.word(128), self.word(64)
        if FENCE and not X86_64:
            FENCE()                                                 # acquire: the records are read after w
        if write - read > self.capacity or write < read:
            return False
        consumed = 0
        while read != write:
            at = 256 + read % self.capacity
            length, flags = struct.unpack_from("<II", self.map, at)
            if flags & 1:
                size = 16 + length                          # padding: the rest of the data area
            else:
                size = 16 + (length + 15) // 16 * 16
                consumed += length
                self.records += 1
            if size > write - read or (read % self.capacity) + size > self.capacity:
                return False
            read += size
        self.set_word(136, self.records)
        self.set_word(152, time.clock_gettime_ns(time.CLOCK_MONOTONIC))
        self.set_word(168, self.word(168) + consumed)            # "sent onward": the lamp plays what it reads
        if FENCE and not X86_64:
            FENCE()                                                 # release: the records were read before r moves
        self.set_word(128, read)
        return True

    def wait_fd(self):
        """Marks the consumer as waiting and returns the eventfd to poll, or None if records came meanwhile (§13.2).
        The caller polls it with a timeout (TICK) and consumes at every pass, whatever woke it: the bound on a
        wakeup lost where there is no fence."""
        struct.pack_into("<I", self.map, 160, 1)
        if FENCE:
            FENCE()                                                 # store waiting, then load w: never reordered
        if self.word(64) != self.word(128):
            struct.pack_into("<I", self.map, 160, 0)
            return None
        return self.wakeup_fd

    def close(self):
        if hasattr(self, "words"):
            struct.pack_into("<I", self.map, 164, 1)                # consumer closed
            self.words.release()
            self.map.close()
            del self.words
        for fd in (self.memory_fd, self.wakeup_fd):
            try:
                os.close(fd)
            except OSError:
                pass


# ---- the connection ----

class Channel:
    """Descriptor 3: frames in and out (§2), descriptors with their frames (§5), the hello (§4)."""
    def __init__(self):
        self.sock = socket.socket(fileno=3)
        self.buffer = bytearray()
        self.offset = 0                    # stream offset of buffer[0]
        self.descriptors = []              # (stream offset of the read that brought it, fd)
        self.limit = MAX_FRAME             # what this side accepts; after hello, the smaller of both
        self.send_limit = MAX_FRAME
        self.next_id = 1

    def send(self, message):
        body = json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode()
        if len(body) > self.send_limit:
            raise DeviceError(1003, f"a message of {len(body)} bytes is over the agreed {self.send_limit}")
        self.sock.sendall(struct.pack(">I", len(body)) + body)     # Python ignores SIGPIPE: a closed peer is an error here

    def fail(self, error):
        """Answers a violation with `"id"` as readable, else null (§8)."""
        try:
            self.send({"jsonrpc": "2.0", "id": error.id, "error": {"code": error.code, "message": error.message}})
        except OSError:
            pass

    def fileno(self):
        return self.sock.fileno()

    def receive(self):
        """Reads what is there; False at end of file."""
        space = socket.CMSG_SPACE(253 * 4)
        data, ancillary, flags, _ = self.sock.recvmsg(65536, space, getattr(socket, "MSG_CMSG_CLOEXEC", 0))
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds = array.array("i")
                fds.frombytes(payload[:len(payload) - len(payload) % fds.itemsize])
                self.descriptors.extend((self.offset + len(self.buffer), fd) for fd in fds)
        if flags & socket.MSG_CTRUNC:
            raise ProtocolError(-32007, "descriptors were truncated (MSG_CTRUNC)", closes=True)
        if not data:
            return False
        self.buffer += data
        return True

    def frames(self):
        """Complete frames as (body, descriptors); ProtocolError for framing and descriptor faults (§2, §5)."""
        while len(self.buffer) >= 4:
            length = struct.unpack_from(">I", self.buffer, 0)[0]
            if length == 0:
                raise ProtocolError(-32010, "a frame of length 0 (there are no empty messages)", closes=True)
            if length > self.limit:
                raise ProtocolError(-32005, f"a frame of {length} bytes is over the agreed maximum of {self.limit}", closes=True)
            if len(self.buffer) < 4 + length:
                return
            start = self.offset
            body = bytes(self.buffer[4:4 + length])
            del self.buffer[:4 + length]
            self.offset += 4 + length
            # Descriptors come with the first byte of their frame: those that arrived by then are this frame's.
            arrived = [fd for at, fd in self.descriptors if at <= start]
            yield body, start, arrived

    def claim(self, start, count):
        """The `count` descriptors of the frame that began at `start`; -32007 if they disagree (§5)."""
        arrived = [fd for at, fd in self.descriptors if at <= start]
        if len(arrived) != count:
            for _, fd in self.descriptors:
                os.close(fd)
            self.descriptors = []
            raise ProtocolError(-32007, f"the frame names {count} descriptor(s) and {len(arrived)} came with it", closes=True)
        self.descriptors = self.descriptors[count:]
        return arrived

    def close(self):
        for _, fd in self.descriptors:
            os.close(fd)
        self.sock.close()


class LampDriver:
    def __init__(self, pairing_code):
        self.channel = Channel()
        self.devices = [
            Device("lamp-speaker-1", "Lamp Speaker", ["urlPlayback", "realtimeAudioStreaming"], "speaker", "absolute", True),
            Device("porch-lamp-1", "Porch Lamp", ["urlPlayback"], "speaker", "relative", False, pairing_code=pairing_code),
        ]
        self.sessions = {}                 # session id -> device id, once activated
        self.pairing = {}                  # session id -> device id, while a code is awaited
        self.playbacks = {}                # session id -> Playback
        self.rings = {}                    # (session, stream) -> Ring
        self.handlers = {
            "rpc.ping": lambda p: {},
            "discovery.start": self.start_discovery, "discovery.stop": lambda p: None,
            "device.activate": self.activate, "device.pair": self.pair, "device.deactivate": self.deactivate,
            "volume.set": self.set_volume, "volume.get": self.get_volume, "volume.change": self.change_volume,
            "volume.mute": lambda p: self.mute(p, "volume.mute", True), "volume.unmute": lambda p: self.mute(p, "volume.unmute", False),
            "session.start": self.start_session, "session.stop": self.stop_session, "session.dataToDevice": self.data_to_device,
            "playback.set": self.set_playback, "stream.start": self.start_stream, "stream.stop": self.stop_stream,
        }
        self.later = []                    # notifications to send after the answer to the request that caused them
        self.descriptors = []              # the descriptors of the request being handled

    def notify(self, method, params):
        self.later.append({"jsonrpc": "2.0", "method": method, "params": params})

    # -- §4 --
    def handshake(self):
        identity = {"name": "lamp_driver.py", "protocol": PROTOCOL, "pid": os.getpid(),
                    "supportsSimultaneousSessions": False, "realtimeSampleHandling": True}
        self.channel.send({"jsonrpc": "2.0", "id": 0, "method": "hello",
                           "params": {"version": 1, "role": "driver", "identity": identity, "maxFrameLength": MAX_FRAME, "features": ["fd-passing"]}})
        deadline = time.monotonic() + HANDSHAKE_SECONDS
        while True:
            for body, start, arrived in self.channel.frames():
                kind, message = message_shape(parse_body(body))
                if kind == "response" and message["id"] == 0:
                    if "error" in message:
                        raise SystemExit(f"the supervisor refused the hello: {message['error'].get('message')}")
                    hello = message["result"]
                    if not isinstance(hello, dict) or hello.get("version") != 1 or hello.get("role") != "supervisor":
                        raise SystemExit(f"the peer is not a version 1 supervisor: {hello}")
                    peer_limit = hello.get("maxFrameLength")
                    if not isinstance(peer_limit, int) or not 4096 <= peer_limit <= 2**32 - 1:
                        raise SystemExit(f"the supervisor's maxFrameLength {peer_limit} is not 4096 … 4294967295")
                    self.channel.limit = self.channel.send_limit = min(MAX_FRAME, peer_limit)
                    return
                raise ProtocolError(-32002, "the first message must be the answer to hello", closes=True, id=message.get("id"))
            left = deadline - time.monotonic()
            if left <= 0:
                raise SystemExit("the supervisor did not answer hello within 5 s")
            if select.select([self.channel], [], [], left)[0] and not self.channel.receive():
                raise SystemExit("the supervisor closed the connection during the handshake")

    # -- the loop --
    def run(self):
        supervisor = os.environ.get("MEDIAROUTE_SUPERVISOR_PID")
        last = time.monotonic()
        self.handle_frames()                     # frames that came in the same read as the answer to hello
        while True:
            if supervisor and os.getppid() != int(supervisor):
                raise SystemExit("the supervisor that started this driver is gone")
            waits = [self.channel] + [fd for fd in (ring.wait_fd() for ring in self.rings.values()) if fd is not None]
            ready = select.select(waits, [], [], TICK)[0]
            if self.channel in ready:
                if not self.channel.receive():
                    raise SystemExit(0)          # end of file on descriptor 3: leave (§11.2, Idle exit)
                self.handle_frames()
            # Only the eventfds of rings still open: a stream.stop just handled may have closed one that was ready.
            live = {ring.wakeup_fd for ring in self.rings.values()}
            for fd in ready:
                if fd is not self.channel and fd in live:
                    try:
                        os.read(fd, 8)
                    except BlockingIOError:
                        pass
            now = time.monotonic()
            self.tick(now - last, now)
            last = now

    def handle_frames(self):
        for body, start, arrived in self.channel.frames():
            try:
                kind, message = message_shape(parse_body(body))
            except ProtocolError as error:
                self.channel.fail(error)                  # answered first, as ours does (§8) ...
                if error.closes:
                    raise SystemExit(0)
                if arrived:
                    self.channel.claim(start, 0)          # ... then its descriptors are named by no frame: -32007, closed (§5)
                continue
            self.descriptors = self.channel.claim(start, message.get("fds", 0))
            try:
                if kind == "request":
                    self.answer(message)
                elif kind == "notification" and message["method"] != "rpc.cancel":
                    log(f"ignored notification {message['method']}")     # every request is answered at once: nothing to cancel
            finally:
                for fd in self.descriptors:                             # descriptors no handler kept are closed (§5)
                    os.close(fd)
                self.descriptors = []

    def answer(self, message):
        id, method, params = message["id"], message["method"], message.get("params", {})
        self.later = []
        try:
            if method == "hello":
                raise ProtocolError(-32600, "hello happens once per connection")
            handler = self.handlers.get(method)
            if handler is None:
                raise ProtocolError(-32601, f"this driver has no method \"{method}\"")
            reply = {"jsonrpc": "2.0", "id": id, "result": handler(params)}
        except (ProtocolError, DeviceError) as error:
            self.later = []
            reply = {"jsonrpc": "2.0", "id": id, "error": {"code": error.code, "message": error.message}}
        self.channel.send(reply)
        for notification in self.later:
            self.channel.send(notification)
        self.later = []

    def tick(self, elapsed, now):
        for session, playback in self.playbacks.items():
            playback.advance(elapsed)
            if playback.playing and now - playback.last_sent >= PLAYBACK_STATE_SECONDS:
                playback.last_sent = now
                self.channel.send({"jsonrpc": "2.0", "method": "playback.state", "params": {"session": session, "state": playback.state()}})
        for (session, stream), ring in list(self.rings.items()):
            if not ring.consume():
                ring.close()
                del self.rings[(session, stream)]
                self.channel.send({"jsonrpc": "2.0", "method": "stream.failed", "params": {"session": session, "stream": stream,
                                   "error": {"code": 1003, "message": "the ring's positions broke §13.2; the stream was closed"}}})

    # -- §11.2 methods --
    def device(self, params, method):
        given = member(params, "device", "object", method)
        id = member(given, "id", "string", method + " device")
        for device in self.devices:
            if device.id == id:
                return device
        raise DeviceError(1005, f"{method}: no device \"{id}\" here")

    def session(self, params, method):
        session = member(params, "session", "string", method)
        if session not in self.sessions:
            raise DeviceError(1005, f"{method}: session \"{session}\" is not active")
        return session

    def start_discovery(self, params):
        for device in self.devices:
            self.notify("device.found", {"device": device.json()})

    def activate(self, params):
        device = self.device(params, "device.activate")
        session = member(params, "session", "string", "device.activate")
        member(params, "features", "array", "device.activate")
        if device.pairing_code:
            self.pairing[session] = device.id
            self.notify("device.pairingRequested", {"device": device.id, "session": session, "reason": "Enter the code on the lamp's base.",
                                                    "authorizationMethod": {"type": "numericCode", "length": len(device.pairing_code)}})
        else:
            self.sessions[session] = device.id
            self.notify("device.activated", {"device": device.id, "session": session})

    def pair(self, params):
        device = self.device(params, "device.pair")
        session = member(params, "session", "string", "device.pair")
        if "code" not in params:
            raise ProtocolError(-32602, "device.pair: \"code\" is missing (null when the person cancelled)")
        code = params["code"]
        if code is not None and not isinstance(code, str):
            raise ProtocolError(-32602, "device.pair: \"code\": expected a string or null")
        if self.pairing.pop(session, None) != device.id:
            raise DeviceError(1005, f"device.pair: session \"{session}\" is not waiting for a code")
        if code == device.pairing_code:
            self.sessions[session] = device.id
            self.notify("device.activated", {"device": device.id, "session": session})
        else:
            why = f"pairing with {device.name} was cancelled" if code is None else f"{device.name} refused the code {code}"
            self.notify("device.activationFailed", {"device": device.id, "session": session, "error": {"code": 1002, "message": why}})

    def deactivate(self, params):
        self.device(params, "device.deactivate")
        session = member(params, "session", "string", "device.deactivate")
        self.pairing.pop(session, None)
        self.sessions.pop(session, None)
        self.playbacks.pop(session, None)
        for key in [key for key in self.rings if key[0] == session]:
            self.rings.pop(key).close()

    def set_volume(self, params):
        device = self.device(params, "volume.set")
        volume = member(params, "volume", "number", "volume.set")
        if device.volume_control != "absolute":
            raise DeviceError(1006, f"{device.name} has {device.volume_control} volume: it takes no level")
        if not 0 <= volume <= 1:
            raise ProtocolError(-32602, f"volume.set: \"volume\": must be from 0 to 1, not {volume}")
        device.level = volume

    def get_volume(self, params):
        device = self.device(params, "volume.get")
        return {"volume": device.volume(), "muted": device.muted}

    def change_volume(self, params):
        device = self.device(params, "volume.change")
        by = member(params, "by", "integer", "volume.change")
        if not -100 <= by <= 100:
            raise ProtocolError(-32602, f"volume.change: \"by\": must be from -100 to 100, not {by}")
        if device.volume_control == "absolute":
            device.level = min(1.0, max(0.0, round(device.level + by * 0.05, 6)))     # 5 % a step (§11.2, Volume)
        elif device.volume_control == "relative":
            device.steps = min(20, max(0, device.steps + by))
        else:
            raise DeviceError(1006, f"{device.name} has no volume control")

    def mute(self, params, method, muted):
        device = self.device(params, method)
        if not device.can_mute:
            raise DeviceError(1006, f"{device.name} cannot mute")
        device.muted = muted

    def start_session(self, params):
        session = self.session(params, "session.start")
        url = member(params, "url", "string", "session.start")
        application = member(params, "application", "string", "session.start", optional=True)
        if url.split(":", 1)[0] not in ("http", "https", "rtsp", "file"):
            self.notify("session.failed", {"session": session, "error": {"code": 1003, "message": f"the lamp cannot play {url}: not an http, https, rtsp or file URL"}})
            return
        playback = Playback(url)
        self.playbacks[session] = playback
        started = {"session": session, "state": playback.state()}
        if application is not None:
            started["application"] = application
        self.notify("session.started", started)

    def stop_session(self, params):
        session = member(params, "session", "string", "session.stop")
        self.playbacks.pop(session, None)

    def set_playback(self, params):
        session = member(params, "session", "string", "playback.set")
        changes = member(params, "changes", "object", "playback.set")
        playback = self.playbacks.get(session)
        if playback is None:
            raise DeviceError(1003, f"session \"{session}\" has no playback in progress")
        ranges = {"position": (0, 1e9), "speed": (-64, 64), "volume": (0, 1)}
        for name, (low, high) in ranges.items():
            if name in changes and changes[name] is not None:
                value = member(changes, name, "number", "playback.set changes")
                if not low <= value <= high:
                    raise ProtocolError(-32602, f"playback.set: \"changes.{name}\": must be from {low} to {high}, not {value}")
        # In §11.1's order: seek before play.
        if changes.get("position") is not None:
            playback.position = float(changes["position"])
        if changes.get("speed") is not None:
            playback.speed = float(changes["speed"])
        if changes.get("volume") is not None:
            playback.volume = float(changes["volume"])
        if changes.get("muted") is not None:
            playback.muted = bool(member(changes, "muted", "boolean", "playback.set changes"))
        if "selectedAudioOption" in changes:
            option = changes["selectedAudioOption"]
            if option is not None and option != "English":
                raise DeviceError(1006, f"the lamp has no audio track \"{option}\"")
            playback.audio = option
        if changes.get("isPlaying") is not None:
            playback.playing = bool(member(changes, "isPlaying", "boolean", "playback.set changes"))
        playback.last_sent = 0                 # a change is reported at once (on the next tick)
        return playback.state()

    def data_to_device(self, params):
        session = self.session(params, "session.dataToDevice")
        application = member(params, "application", "string", "session.dataToDevice")
        data = member(params, "data", "string", "session.dataToDevice")
        try:
            base64.b64decode(data, validate=True)
        except ValueError:
            raise ProtocolError(-32602, "session.dataToDevice: \"data\": not base64 (RFC 4648, standard alphabet, padded)")
        # The lamp's application echoes every message to the app that sent it.
        self.notify("session.dataToApplication", {"session": session, "application": application, "data": data})

    def start_stream(self, params):
        session = self.session(params, "stream.start")
        stream = member(params, "stream", "string", "stream.start")
        format = member(params, "format", "object", "stream.start")
        kind = format.get("kind")
        device = next(d for d in self.devices if d.id == self.sessions[session])
        wanted = {"audio": "realtimeAudioStreaming", "video": "realtimeVideoStreaming"}.get(kind)
        if wanted is None:
            raise ProtocolError(-32602, f"stream.start: \"format.kind\": must be audio or video, not {json.dumps(kind)}")
        if wanted not in device.capabilities:
            raise DeviceError(1006, f"{device.name} takes no {kind} samples")
        if len(self.descriptors) != 2:
            raise ProtocolError(-32602, f"stream.start: expected 2 descriptors (memfd, eventfd), got {len(self.descriptors)}")
        memory, wakeup = self.descriptors
        self.rings[(session, stream)] = Ring(memory, wakeup, kind)
        self.descriptors = []                  # kept by the ring
        return {"latency": 0.05}

    def stop_stream(self, params):
        session = member(params, "session", "string", "stream.stop")
        stream = member(params, "stream", "string", "stream.stop")
        ring = self.rings.pop((session, stream), None)
        if ring:
            ring.consume()
            ring.close()


def main():
    code = "2468"
    if "--pairing-code" in sys.argv[1:-1]:
        code = sys.argv[sys.argv.index("--pairing-code") + 1]
    # Leave with the supervisor (§11.2): SIGTERM when the parent dies.
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)            # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    supervisor = os.environ.get("MEDIAROUTE_SUPERVISOR_PID")
    if supervisor and os.getppid() != int(supervisor):
        sys.exit("the supervisor that started this driver is gone")
    driver = LampDriver(code)
    try:
        driver.handshake()
        driver.run()
    except ProtocolError as error:
        driver.channel.fail(error)
        log(f"closing: {error.message}")
    except (BrokenPipeError, ConnectionResetError):
        log("the supervisor closed the connection")
    finally:
        for ring in driver.rings.values():
            ring.close()
        driver.channel.close()


if __name__ == "__main__":
    main()
