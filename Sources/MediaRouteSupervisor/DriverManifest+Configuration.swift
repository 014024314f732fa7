extension DriverManifest {
    /// This manifest under the daemon's configuration: its restart policy and timeouts are the
    /// built-in defaults, then the configuration's defaults, then the manifest's own settings, then
    /// the configuration's override for this driver; the override's variables join its environment.
    public func configured(by settings: DriverSettings) -> DriverManifest {
        var manifest = self
        let override = settings.overrides[protocolID] ?? DriverOverride()
        manifest.restart = override.restart.applied(to: declaredRestart.applied(to: settings.restart.applied(to: RestartPolicy())))
        manifest.timeouts = override.timeouts.applied(to: declaredTimeouts.applied(to: settings.timeouts.applied(to: Timeouts())))
        manifest.environment = declaredEnvironment.merging(override.environment) { _, configured in configured }
        return manifest
    }
}
