/// The new driver's manifest: its three identity places agreeing, the executable, and the restart
/// and timeout settings the reference driver uses.
enum ManifestTemplate {
    static func text(_ names: DriverNames) -> String {
        #"""
        {
          "protocol": "\#(names.protocolID)",
          "exportedType": {
            "identifier": "\#(names.protocolID)",
            "conformsTo": ["public.media-sharing-protocol"],
            "description": "\#(names.displayName.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\""))"
          },
          "executable": "\#(names.executable)",
          "restart": { "intensity": 5, "periodSeconds": 60, "initialBackoffMilliseconds": 100, "maximumBackoffMilliseconds": 5000 },
          "timeouts": { "requestMilliseconds": 15000, "idleExitMilliseconds": 60000 }
        }

        """#
    }
}
