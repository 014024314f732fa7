import Foundation

/// The introspection XML of an exported path: its interfaces, and the next path element of every
/// exported path below it as child nodes (so tools like busctl can walk our tree).
enum Introspection {
    static func xml(for path: DBusObjectPath, exported: [DBusObjectPath: [String: DBusInterface]]) -> String? {
        let prefix = path.rawValue == "/" ? "/" : path.rawValue + "/"
        let children = Set(exported.keys.compactMap { other -> String? in
            guard other.rawValue.hasPrefix(prefix), other != path else { return nil }
            return other.rawValue.dropFirst(prefix.count).split(separator: "/").first.map(String.init)
        })
        let interfaces = exported[path]
        guard interfaces != nil || !children.isEmpty else { return nil }
        var xml = "<!DOCTYPE node PUBLIC \"-//freedesktop//DTD D-BUS Object Introspection 1.0//EN\" "
            + "\"http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd\">\n<node>\n"
        xml += "  <interface name=\"org.freedesktop.DBus.Introspectable\"><method name=\"Introspect\"><arg name=\"xml\" type=\"s\" direction=\"out\"/></method></interface>\n"
        if let interfaces {
            xml += "  <interface name=\"org.freedesktop.DBus.Properties\">"
                + "<method name=\"Get\"><arg name=\"interface\" type=\"s\" direction=\"in\"/><arg name=\"name\" type=\"s\" direction=\"in\"/><arg name=\"value\" type=\"v\" direction=\"out\"/></method>"
                + "<method name=\"GetAll\"><arg name=\"interface\" type=\"s\" direction=\"in\"/><arg name=\"properties\" type=\"a{sv}\" direction=\"out\"/></method>"
                + "<method name=\"Set\"><arg name=\"interface\" type=\"s\" direction=\"in\"/><arg name=\"name\" type=\"s\" direction=\"in\"/><arg name=\"value\" type=\"v\" direction=\"in\"/></method>"
                + "<signal name=\"PropertiesChanged\"><arg name=\"interface\" type=\"s\"/><arg name=\"changed\" type=\"a{sv}\"/><arg name=\"invalidated\" type=\"as\"/></signal>"
                + "</interface>\n"
            for interface in interfaces.values.sorted(by: { $0.name < $1.name }) {
                xml += "  <interface name=\"\(escaped(interface.name))\">\n"
                for method in interface.methods {
                    xml += "    <method name=\"\(escaped(method.name))\">"
                    xml += method.inputs.map { "<arg name=\"\(escaped($0.name))\" type=\"\(escaped($0.signature.rawValue))\" direction=\"in\"/>" }.joined()
                    xml += method.outputs.map { "<arg name=\"\(escaped($0.name))\" type=\"\(escaped($0.signature.rawValue))\" direction=\"out\"/>" }.joined()
                    xml += "</method>\n"
                }
                for property in interface.properties {
                    xml += "    <property name=\"\(escaped(property.name))\" type=\"\(escaped(property.signature.rawValue))\" access=\"\(property.set == nil ? "read" : "readwrite")\"/>\n"
                }
                for signal in interface.signals {
                    xml += "    <signal name=\"\(escaped(signal.name))\">"
                    xml += signal.arguments.map { "<arg name=\"\(escaped($0.name))\" type=\"\(escaped($0.signature.rawValue))\"/>" }.joined()
                    xml += "</signal>\n"
                }
                xml += "  </interface>\n"
            }
        }
        for child in children.sorted() { xml += "  <node name=\"\(escaped(child))\"/>\n" }
        return xml + "</node>\n"
    }

    private static func escaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}
