import Foundation

/// Where mediarouted's configuration file is: `--config PATH`, else `$MEDIAROUTE_CONFIG`, else
/// `/etc/mediaroute/mediarouted.yaml` for root and `$XDG_CONFIG_HOME/mediaroute/mediarouted.yaml`
/// (`~/.config/...` without it) for another user. A file named explicitly must exist; the default
/// one may be missing, and then every setting takes its default.
public struct ConfigurationFileLocation: Sendable, Hashable {
    public let path: String
    /// Named by `--config` or `$MEDIAROUTE_CONFIG`, rather than the default place.
    public let isExplicit: Bool
    /// Which of them named it, for the sentence when it is missing.
    public let namedBy: String

    public static let systemPath = "/etc/mediaroute/mediarouted.yaml"

    public init(option: String?, environment: [String: String], isRoot: Bool, home: String) {
        if let option {
            (path, isExplicit, namedBy) = (option, true, "--config")
        } else if let variable = environment["MEDIAROUTE_CONFIG"], !variable.isEmpty {
            (path, isExplicit, namedBy) = (variable, true, "$MEDIAROUTE_CONFIG")
        } else if isRoot {
            (path, isExplicit, namedBy) = (Self.systemPath, false, "the default for root")
        } else {
            let base = environment["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? home + "/.config"
            (path, isExplicit, namedBy) = (base + "/mediaroute/mediarouted.yaml", false, "the default for a user")
        }
    }

    /// The file's settings; none (every default) when the default file does not exist.
    public func read() throws(ConfigurationProblem) -> ConfigurationFile {
        guard FileManager.default.fileExists(atPath: path) else {
            if isExplicit { throw ConfigurationProblem(path: path, reason: "does not exist (named by \(namedBy)); create it, or name another file") }
            return ConfigurationFile()
        }
        return try ConfigurationFile(path: path)
    }
}
