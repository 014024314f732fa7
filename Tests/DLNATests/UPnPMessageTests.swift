import Foundation
import Testing
import UPnP

/// The UPnP messages the driver reads and writes, against documents shaped as renderers send them
/// (and as hostile ones might): the live exchanges are tested against gmediarender elsewhere.
@Suite("UPnP messages: SSDP, descriptions, SOAP, events")
struct UPnPMessageTests {
    @Test func anSSDPAnswerAndNotificationsBecomeAnnouncements() throws {
        let answer = try #require(SSDPMessage(Array("HTTP/1.1 200 OK\r\nCACHE-CONTROL: max-age=900\r\nLOCATION: http://10.0.0.7:49494/description.xml\r\nST: urn:schemas-upnp-org:device:MediaRenderer:1\r\nUSN: uuid:abc-1::urn:schemas-upnp-org:device:MediaRenderer:1\r\n\r\n".utf8)))
        let alive = try #require(SSDPAnnouncement(answer, sender: "10.0.0.7"))
        #expect(alive.udn == "uuid:abc-1")
        #expect(alive.kind == .alive(location: URL(string: "http://10.0.0.7:49494/description.xml")!, maxAge: 900))

        let byebye = try #require(SSDPMessage(Array("NOTIFY * HTTP/1.1\r\nHOST: 239.255.255.250:1900\r\nNT: upnp:rootdevice\r\nNTS: ssdp:byebye\r\nUSN: uuid:abc-1::upnp:rootdevice\r\n\r\n".utf8)))
        #expect(SSDPAnnouncement(byebye, sender: "10.0.0.7")?.kind == .byebye)

        // Searches from other control points, and messages missing what SSDP requires, say nothing.
        let search = try #require(SSDPMessage(SSDPMessage.search(for: "ssdp:all", mx: 1)))
        #expect(search["man"] == "\"ssdp:discover\"")
        #expect(SSDPAnnouncement(search, sender: "10.0.0.9") == nil)
        let noLocation = try #require(SSDPMessage(Array("NOTIFY * HTTP/1.1\r\nNT: upnp:rootdevice\r\nNTS: ssdp:alive\r\nUSN: uuid:x\r\n\r\n".utf8)))
        #expect(SSDPAnnouncement(noLocation, sender: "10.0.0.9") == nil)
        let fileLocation = try #require(SSDPMessage(Array("NOTIFY * HTTP/1.1\r\nNT: upnp:rootdevice\r\nNTS: ssdp:alive\r\nUSN: uuid:x\r\nLOCATION: file:///etc/passwd\r\n\r\n".utf8)))
        #expect(SSDPAnnouncement(fileLocation, sender: "10.0.0.9") == nil)
        #expect(SSDPMessage(Array(repeating: 0x41, count: 10_000)) == nil)
        #expect(SSDPMessage([0xFF, 0xFE, 0x00]) == nil)
    }

    /// Read byte by byte: bare LF line ends, header names in any case, spaces around values, a
    /// header given twice (the first counts), a USN without a type, and a line without a colon.
    @Test func anSSDPMessageIsReadAsSendersWriteIt() throws {
        let loose = try #require(SSDPMessage(Array("HTTP/1.1 200 OK\nLocation:   http://10.0.0.8:8080/d.xml  \nst: urn:x\nSt: urn:y\nusn: uuid:solo\n\n".utf8)))
        #expect(loose.startLine == "HTTP/1.1 200 OK")
        #expect(loose["LOCATION"] == "http://10.0.0.8:8080/d.xml")
        #expect(loose["st"] == "urn:x")
        let announcement = try #require(SSDPAnnouncement(loose, sender: "10.0.0.8"))
        #expect(announcement.udn == "uuid:solo")
        #expect(announcement.target == "urn:x")
        #expect(SSDPMessage(Array("HTTP/1.1 200 OK\r\nno colon here\r\n\r\n".utf8)) == nil)
        #expect(SSDPMessage(Array("GET / HTTP/1.0\r\n\r\n".utf8)) == nil)
    }

    @Test func maxAgeIsReadAndBounded() {
        #expect(SSDPAnnouncement.defaultMaxAge == 1800)
        let cases: [(String?, Int)] = [(nil, 1800), ("max-age=60", 60), ("no-cache, max-age = 5", 5), ("max-age=0", 1), ("max-age=999999999", 86_400), ("max-age=x", 1800)]
        for (header, expected) in cases {
            let text = "HTTP/1.1 200 OK\r\nLOCATION: http://h/d.xml\r\nST: x\r\nUSN: uuid:u\r\n" + (header.map { "CACHE-CONTROL: \($0)\r\n" } ?? "") + "\r\n"
            let announcement = SSDPMessage(Array(text.utf8)).flatMap { SSDPAnnouncement($0, sender: "h") }
            #expect(announcement?.kind == .alive(location: URL(string: "http://h/d.xml")!, maxAge: expected), "\(header ?? "nil")")
        }
    }

    static let description = """
    <?xml version="1.0"?>
    <root xmlns="urn:schemas-upnp-org:device-1-0"><specVersion><major>1</major><minor>0</minor></specVersion>
    <device><deviceType>urn:schemas-upnp-org:device:Basic:1</deviceType><friendlyName>Shell</friendlyName><UDN>uuid:root</UDN>
    <deviceList><device><deviceType>urn:schemas-upnp-org:device:MediaRenderer:1</deviceType>
    <friendlyName>Living Room &amp; Kitchen</friendlyName><manufacturer>Acme</manufacturer><modelName>TV 9</modelName>
    <UDN>uuid:renderer-9</UDN>
    <iconList><icon><mimetype>image/png</mimetype><width>64</width><height>64</height><depth>24</depth><url>/icon.png</url></icon></iconList>
    <serviceList>
    <service><serviceType>urn:schemas-upnp-org:service:AVTransport:1</serviceType><serviceId>urn:upnp-org:serviceId:AVTransport</serviceId>
    <SCPDURL>/avt.xml</SCPDURL><controlURL>/upnp/control/avt</controlURL><eventSubURL>/upnp/event/avt</eventSubURL></service>
    <service><serviceType>urn:schemas-upnp-org:service:RenderingControl:1</serviceType><serviceId>urn:upnp-org:serviceId:RenderingControl</serviceId>
    <SCPDURL>/rc.xml</SCPDURL><controlURL>upnp/control/rc</controlURL><eventSubURL>/upnp/event/rc</eventSubURL></service>
    <service><serviceType>urn:schemas-upnp-org:service:ConnectionManager:1</serviceType><serviceId>urn:upnp-org:serviceId:ConnectionManager</serviceId>
    <SCPDURL>/cm.xml</SCPDURL><controlURL>/upnp/control/cm</controlURL><eventSubURL></eventSubURL></service>
    </serviceList></device></deviceList></device></root>
    """

    @Test func anEmbeddedRendererIsReadWithItsServiceURLsResolved() throws {
        let location = URL(string: "http://10.0.0.7:49494/dev/description.xml")!
        let description = try DeviceDescription(xml: Array(Self.description.utf8), location: location)
        #expect(description.udn == "uuid:renderer-9")
        #expect(description.friendlyName == "Living Room & Kitchen")
        #expect(description.modelName == "TV 9")
        #expect(description.avTransport.controlURL.absoluteString == "http://10.0.0.7:49494/upnp/control/avt")
        #expect(description.renderingControl.controlURL.absoluteString == "http://10.0.0.7:49494/dev/upnp/control/rc")
        #expect(description.avTransport.eventURL?.absoluteString == "http://10.0.0.7:49494/upnp/event/avt")
        #expect(description.icons.first?.url.absoluteString == "http://10.0.0.7:49494/icon.png")
    }

    @Test func theConnectionManagerIsFoundByAScanAsTheParseFindsIt() throws {
        let location = URL(string: "http://10.0.0.7:49494/dev/description.xml")!
        func guess(_ text: String) -> DeviceDescription.Service? {
            DeviceDescriptionDocument.connectionManagerGuess(in: Array(text.utf8), location: location)
        }
        func parsed(_ text: String) throws -> DeviceDescription.Service {
            try DeviceDescriptionDocument(xml: Array(text.utf8), location: location).service(UPnP.connectionManager)
        }
        let scanned = try #require(guess(Self.description))
        #expect(scanned.controlURL.absoluteString == "http://10.0.0.7:49494/upnp/control/cm")
        #expect(scanned.type == "urn:schemas-upnp-org:service:ConnectionManager:1")
        #expect(try parsed(Self.description).controlURL == scanned.controlURL)
        // A relative URL is relative to <URLBase>, which gmediarender writes after the services.
        let based = Self.description.replacingOccurrences(of: "/upnp/control/cm", with: " upnp/control/cm ")
            .replacingOccurrences(of: "</device></root>", with: "</device><URLBase>http://10.0.0.8:5000/base/</URLBase></root>")
        #expect(guess(based)?.controlURL.absoluteString == "http://10.0.0.8:5000/base/upnp/control/cm")
        #expect(try parsed(based).controlURL == guess(based)?.controlURL)
        // Where a scan cannot tell, no guess: no ConnectionManager, no controlURL in its service,
        // a URL that is not http.
        #expect(guess(Self.description.replacingOccurrences(of: "ConnectionManager:1", with: "Other:1")) == nil)
        #expect(guess(Self.description.replacingOccurrences(of: "<controlURL>/upnp/control/cm</controlURL>", with: "")) == nil)
        #expect(guess(Self.description.replacingOccurrences(of: "/upnp/control/cm", with: "ftp://10.0.0.7/cm")) == nil)
        // An embedded device's ConnectionManager ahead of the renderer's fools the scan: the
        // parse, which the driver checks the guess against, finds the renderer's.
        let shell = "<serviceList><service><serviceType>urn:schemas-upnp-org:service:ConnectionManager:1</serviceType>"
            + "<controlURL>/shell/cm</controlURL></service></serviceList><deviceList>"
        let fooled = Self.description.replacingOccurrences(of: "<deviceList>", with: shell)
        #expect(guess(fooled)?.controlURL.absoluteString == "http://10.0.0.7:49494/shell/cm")
        #expect(try parsed(fooled).controlURL.absoluteString == "http://10.0.0.7:49494/upnp/control/cm")
    }

    @Test func aBrokenDescriptionIsAnErrorNamingWhatIsMissing() {
        let location = URL(string: "http://10.0.0.7/d.xml")!
        func failure(_ text: String) -> String? {
            do {
                _ = try DeviceDescription(xml: Array(text.utf8), location: location)
                return nil
            } catch {
                #expect(error.kind == .brokenDescription)
                return error.description
            }
        }
        #expect(failure("")?.contains("is empty") == true)
        #expect(failure("<root><device>")?.contains("not well-formed XML") == true)
        #expect(failure("<html>hello</html>")?.contains("no <root><device>") == true)
        #expect(failure(Self.description.replacingOccurrences(of: "<UDN>uuid:renderer-9</UDN>", with: ""))?.contains("has no <UDN>") == true)
        #expect(failure(Self.description.replacingOccurrences(of: "RenderingControl:1", with: "Other:1"))?.contains("lists no RenderingControl service") == true)
        #expect(failure(Self.description.replacingOccurrences(of: "MediaRenderer:1", with: "MediaServer:1"))?.contains("describes no MediaRenderer") == true)
        // An entity bomb is refused by the parser, not expanded into gigabytes.
        let bomb = "<?xml version=\"1.0\"?><!DOCTYPE r [<!ENTITY a \"aaaaaaaaaa\"><!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;\"><!ENTITY c \"&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;\"><!ENTITY d \"&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;\"><!ENTITY e \"&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;\"><!ENTITY f \"&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;\"><!ENTITY g \"&f;&f;&f;&f;&f;&f;&f;&f;&f;&f;\"><!ENTITY h \"&g;&g;&g;&g;&g;&g;&g;&g;&g;&g;\">]><root><device><friendlyName>&h;</friendlyName></device></root>"
        #expect(failure(bomb)?.contains("document type declaration") == true)
        // UPnP documents never carry a DTD: one that does is refused, however harmless.
        #expect(failure("<!DOCTYPE root [<!ENTITY n \"TV\">]>" + Self.description.replacingOccurrences(of: "<?xml version=\"1.0\"?>", with: ""))?
            .contains("document type declaration") == true)
        #expect(failure(String(repeating: "<a>", count: 200) + String(repeating: "</a>", count: 200))?.contains("nested deeper") == true)
    }

    @Test func xmlAsRenderersWriteIt() throws {
        // Prefixes dropped (declared or not, as sloppy renderers write them), CDATA and character
        // references read as text, attributes by local name, comments skipped.
        let document = """
        <?xml version="1.0"?><r:root xmlns:r="urn:x" a:kind="tv"><!-- c --><dlna:X_DLNADOC>DMR-1.50</dlna:X_DLNADOC>\
        <name><![CDATA[Tom & Jerry]]> &amp; &#233;</name></r:root>
        """
        let root = try XMLNode.parse(Array(document.utf8), what: "a test document")
        #expect(root.name == "root" && root.attributes == ["kind": "tv"])
        #expect(root.text("X_DLNADOC") == "DMR-1.50")
        #expect(root.text("name") == "Tom & Jerry & é")
        #expect(throws: XMLError.self) { try XMLNode.parse(Array("<a><b></a>".utf8), what: "a test document") }
    }

    @Test func soapEnvelopesAnswersAndFaults() throws {
        let body = String(decoding: SOAPService.envelope("SetAVTransportURI", of: UPnP.avTransport, ["InstanceID": "0", "CurrentURI": "http://a/b?c=1&d=<2>"]), as: UTF8.self)
        #expect(body.contains("<u:SetAVTransportURI xmlns:u=\"urn:schemas-upnp-org:service:AVTransport:1\"><InstanceID>0</InstanceID><CurrentURI>http://a/b?c=1&amp;d=&lt;2&gt;</CurrentURI>"))
        let url = URL(string: "http://10.0.0.7/ctl")!
        let answer = """
        <s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body><u:GetVolumeResponse xmlns:u="urn:schemas-upnp-org:service:RenderingControl:1"><CurrentVolume>42</CurrentVolume></u:GetVolumeResponse></s:Body></s:Envelope>
        """
        #expect(try SOAPService.answer(to: "GetVolume", status: 200, body: Array(answer.utf8), from: url) == ["CurrentVolume": "42"])
        let fault = """
        <s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body><s:Fault><faultcode>s:Client</faultcode><faultstring>UPnPError</faultstring><detail><UPnPError xmlns="urn:schemas-upnp-org:control-1-0"><errorCode>714</errorCode></UPnPError></detail></s:Fault></s:Body></s:Envelope>
        """
        let error = #expect(throws: UPnPError.self) { try SOAPService.answer(to: "SetAVTransportURI", status: 500, body: Array(fault.utf8), from: url) }
        #expect(error?.kind == .fault(code: 714))
        #expect(error?.description == "10.0.0.7 refused SetAVTransportURI: UPnP error 714 (the MIME type is not supported)")
        let garbage = #expect(throws: UPnPError.self) { try SOAPService.answer(to: "Play", status: 200, body: Array("not xml at all".utf8), from: url) }
        #expect(garbage?.kind == .malformedAnswer)
        let server = #expect(throws: UPnPError.self) { try SOAPService.answer(to: "Play", status: 500, body: [], from: url) }
        #expect(server?.kind == .httpStatus(500))
        let wrong = #expect(throws: UPnPError.self) { try SOAPService.answer(to: "Play", status: 200, body: Array(answer.utf8), from: url) }
        #expect(wrong?.description.contains("without a PlayResponse") == true)
    }

    @Test func lastChangeEventsCarryStateVolumeAndDuration() throws {
        let lastChange = "<Event xmlns=\"urn:schemas-upnp-org:metadata-1-0/AVT/\"><InstanceID val=\"0\"><TransportState val=\"PLAYING\"/><CurrentTrackDuration val=\"0:03:05.500\"/><AVTransportURI val=\"http://x/a.wav\"/></InstanceID><InstanceID val=\"1\"><TransportState val=\"STOPPED\"/></InstanceID></Event>"
        let body = "<e:propertyset xmlns:e=\"urn:schemas-upnp-org:event-1-0\"><e:property><LastChange>\(lastChange.xmlEscaped)</LastChange></e:property></e:propertyset>"
        let event = try RendererEvent(propertySet: Array(body.utf8), from: "tv")
        #expect(event.transportState == "PLAYING")
        #expect(event.duration == 185.5)
        #expect(event.currentURI == "http://x/a.wav")
        let volume = "<Event><InstanceID val=\"0\"><Volume channel=\"Master\" val=\"35\"/><Volume channel=\"LF\" val=\"99\"/><Mute channel=\"Master\" val=\"1\"/></InstanceID></Event>"
        let rendering = try RendererEvent(propertySet: Array("<propertyset><property><LastChange>\(volume.xmlEscaped)</LastChange></property></propertyset>".utf8), from: "tv")
        #expect(rendering.volume == 35)
        #expect(rendering.muted == true)
        #expect(throws: XMLError.self) { try RendererEvent(propertySet: Array("<html/>".utf8), from: "tv") }
        #expect(throws: XMLError.self) { try RendererEvent(propertySet: Array("<propertyset><property><LastChange>&lt;Event</LastChange></property></propertyset>".utf8), from: "tv") }
    }

    @Test func timesProtocolInfoAndMetadata() {
        #expect(UPnPTime.seconds("1:02:03") == 3723)
        #expect(UPnPTime.seconds("0:00:01.25") == 1.25)
        #expect(UPnPTime.seconds("0:00:01.1/4") == 1.25)
        #expect(UPnPTime.seconds("NOT_IMPLEMENTED") == nil)
        #expect(UPnPTime.seconds("0:61:00") == nil)
        #expect(UPnPTime.format(3723.4) == "1:02:03")
        #expect(UPnPTime.format(-3) == "0:00:00")
        let sink = ProtocolInfo.list("http-get:*:audio/mpeg:*,http-get:*:audio/L16;rate=48000;channels=2:*,rtsp-rtp-udp:*:video/mp4:*,http-get:*:image/*:*,junk")
        #expect(sink.count == 4)
        #expect(sink.accepting("audio/mpeg")?.contentFormat == "audio/mpeg")
        #expect(sink.accepting("audio/L16;rate=48000;channels=2") != nil)
        #expect(sink.accepting("image/png") != nil)
        #expect(sink.accepting("video/mp4") == nil, "video/mp4 is offered over RTSP only")
        #expect(!sink.rendersVideo, "video over RTSP only is not video this driver can send")
        #expect(ProtocolInfo.list("http-get:*:video/mp4:*").rendersVideo)
        // The summary a renderer is listed on says what the whole list says.
        for text in ["http-get:*:audio/mpeg:*,http-get:*:audio/L16;rate=48000;channels=2:*,rtsp-rtp-udp:*:video/mp4:*,junk",
                     " http-get :*: Video/MP4 :*", "rtsp-rtp-udp:*:video/mp4:*,rtsp-rtp-udp:*:audio/mpeg:*", "http-getx:*:audio/mpeg:*",
                     "http-get:*:image/jpeg:*", "http-get:*::*,http-get:*", "", ",,,", "http-get:*:AUDIO/x-wav:*,http-get:*:video/avi:*"] {
            let list = ProtocolInfo.list(text).filter { $0.transport == "http-get" }
            let summary = ProtocolInfo.summary(of: text)
            #expect(summary.fetchesOverHTTP == !list.isEmpty, "\(text)")
            #expect(summary.rendersAudio == list.contains { $0.contentFormat.lowercased().hasPrefix("audio/") }, "\(text)")
            #expect(summary.rendersVideo == list.rendersVideo, "\(text)")
        }
        let mixed = ProtocolInfo.summary(of: "http-get:*:AUDIO/x-wav:*,http-get:*:video/avi:*")
        #expect(mixed.fetchesOverHTTP && mixed.rendersAudio && mixed.rendersVideo)
        let didl = DIDLLite.item(title: "Tom & Jerry", url: "http://h/a?b=1&c=2", protocolInfo: ProtocolInfo(contentFormat: "audio/mpeg"), mimeType: "audio/mpeg", duration: 65)
        #expect(didl.contains("<dc:title>Tom &amp; Jerry</dc:title>"))
        #expect(didl.contains("<upnp:class>object.item.audioItem.musicTrack</upnp:class>"))
        #expect(didl.contains("protocolInfo=\"http-get:*:audio/mpeg:*\" duration=\"0:01:05\">http://h/a?b=1&amp;c=2</res>"))
    }
}
