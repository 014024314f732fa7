import Foundation
import MediaRouteIPC
import PrivateDaemons

/// A device on the LAN that answers SSDP like a renderer but misbehaves, written in Python from
/// the UPnP specifications: `garbage-description` serves a description that is not XML;
/// `faulting` is a renderer that refuses event subscriptions (so it must be polled) and answers
/// SetAVTransportURI with UPnP error 714; `garbage-soap` answers its actions with non-XML;
/// `plain` misbehaves in nothing but refusing events. Each announces itself with `ssdp:alive`
/// three times per `maxAge` (what its answers to searches say too), as UDA 2.0 asks, so a
/// short `maxAge` makes a renderer whose silence is noticed within seconds.
struct HostileRenderer {
    let process: ChildProcess
    let name: String

    static func start(on host: PrivateHost, network: PrivateNetwork, mode: String, name: String, directory: String, maxAge: Int = 1800) throws -> HostileRenderer {
        let script = directory + "/hostile-renderer.py"
        try source.write(toFile: script, atomically: true, encoding: .utf8)
        let uuid = UUID().uuidString.lowercased()
        let quiet = open("/dev/null", O_WRONLY | O_CLOEXEC)
        defer { close(quiet) }
        let process = try ChildProcess(executable: "/usr/sbin/ip",
                                       arguments: ["netns", "exec", host.namespace, "/usr/bin/python3", "-u", script, mode, host.address, "49600", uuid, name, String(maxAge)],
                                       standardOutput: quiet, standardError: quiet)
        return HostileRenderer(process: process, name: name)
    }

    func stop() async {
        process.signal(SIGKILL)
        _ = await process.exitStatus()
    }

    private static let source = #"""
    import socket, struct, sys, threading, time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    mode, address, port, uuid, name, max_age = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], int(sys.argv[6])
    location = "http://%s:%d/description.xml" % (address, port)
    services = "".join(
        "<service><serviceType>urn:schemas-upnp-org:service:%s:1</serviceType><serviceId>urn:upnp-org:serviceId:%s</serviceId>"
        "<SCPDURL>/%s.xml</SCPDURL><controlURL>/control/%s</controlURL><eventSubURL>/event/%s</eventSubURL></service>" % (s, s, s, s, s)
        for s in ("AVTransport", "RenderingControl", "ConnectionManager"))
    description = ("<?xml version=\"1.0\"?><root xmlns=\"urn:schemas-upnp-org:device-1-0\"><device>"
                   "<deviceType>urn:schemas-upnp-org:device:MediaRenderer:1</deviceType><friendlyName>%s</friendlyName>"
                   "<UDN>uuid:%s</UDN><serviceList>%s</serviceList></device></root>" % (name, uuid, services))
    answers = {
        "GetProtocolInfo": "<Source></Source><Sink>http-get:*:audio/wav:*,http-get:*:audio/mpeg:*</Sink><CurrentConnectionIDs>0</CurrentConnectionIDs>",
        "GetTransportInfo": "<CurrentTransportState>STOPPED</CurrentTransportState><CurrentTransportStatus>OK</CurrentTransportStatus><CurrentSpeed>1</CurrentSpeed>",
        "GetMediaInfo": "<NrTracks>0</NrTracks><MediaDuration>0:00:00</MediaDuration><CurrentURI></CurrentURI>",
        "GetMute": "<CurrentMute>0</CurrentMute>",
        "GetPositionInfo": "<Track>0</Track><TrackDuration>0:00:00</TrackDuration><RelTime>0:00:00</RelTime>",
    }
    volume = ["50"]  # what SetVolume last set, from us or another control point

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def reply(self, status, body, content_type="text/xml; charset=\"utf-8\""):
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if mode == "garbage-description":
                self.reply(200, "<root><device><friendlyName>broken")
            else:
                self.reply(200, description)

        def do_SUBSCRIBE(self):
            self.reply(501, "", "text/plain")

        def do_POST(self):
            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(length).decode("utf-8", "replace")
            action = self.headers.get("SOAPACTION", "").strip('"').split("#")[-1]
            if action == "SetVolume" and "<DesiredVolume>" in body:
                volume[0] = body.split("<DesiredVolume>")[1].split("<")[0]
            answers["GetVolume"] = "<CurrentVolume>%s</CurrentVolume>" % volume[0]
            if mode == "garbage-soap" and action != "GetProtocolInfo":
                return self.reply(200, "<<<this is not a SOAP answer")
            if mode == "faulting" and action == "SetAVTransportURI":
                return self.reply(500, "<?xml version=\"1.0\"?><s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\"><s:Body><s:Fault>"
                                       "<faultcode>s:Client</faultcode><faultstring>UPnPError</faultstring><detail><UPnPError xmlns=\"urn:schemas-upnp-org:control-1-0\">"
                                       "<errorCode>714</errorCode><errorDescription>Illegal MIME-type</errorDescription></UPnPError></detail></s:Fault></s:Body></s:Envelope>")
            self.reply(200, "<?xml version=\"1.0\"?><s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\"><s:Body>"
                            "<u:%sResponse xmlns:u=\"urn:schemas-upnp-org:service:X:1\">%s</u:%sResponse></s:Body></s:Envelope>" % (action, answers.get(action, ""), action))

    server = ThreadingHTTPServer((address, port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    ssdp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    ssdp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ssdp.bind(("", 1900))
    ssdp.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, socket.inet_aton("239.255.255.250") + socket.inet_aton(address))
    renderer_type = "urn:schemas-upnp-org:device:MediaRenderer:1"

    def announce():
        sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sender.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(address))
        notify = ("NOTIFY * HTTP/1.1\r\nHOST: 239.255.255.250:1900\r\nCACHE-CONTROL: max-age=%d\r\nLOCATION: %s\r\nNT: %s\r\n"
                  "NTS: ssdp:alive\r\nSERVER: Linux UPnP/1.0 Hostile/1\r\nUSN: uuid:%s::%s\r\n\r\n" % (max_age, location, renderer_type, uuid, renderer_type))
        while True:
            sender.sendto(notify.encode(), ("239.255.255.250", 1900))
            time.sleep(max_age / 3.0)

    threading.Thread(target=announce, daemon=True).start()
    print("hostile renderer up", flush=True)
    while True:
        data, sender = ssdp.recvfrom(8192)
        if not data.startswith(b"M-SEARCH"):
            continue
        for st in ("urn:schemas-upnp-org:device:MediaRenderer:1",):
            answer = ("HTTP/1.1 200 OK\r\nCACHE-CONTROL: max-age=%d\r\nEXT:\r\nLOCATION: %s\r\nSERVER: Linux UPnP/1.0 Hostile/1\r\n"
                      "ST: %s\r\nUSN: uuid:%s::%s\r\n\r\n" % (max_age, location, st, uuid, st))
            ssdp.sendto(answer.encode(), sender)
    """#
}
