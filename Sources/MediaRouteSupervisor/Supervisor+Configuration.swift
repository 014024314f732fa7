import MediaDevice

/// The daemon's configuration, changed while it runs (SIGHUP): drivers directories, restart and
/// timeout defaults, per-driver overrides and the discovery wait apply at once (a driver's restart
/// policy and timeouts from its next start, as an edited manifest's do); a driver the configuration
/// disables is stopped.
extension Supervisor {
    /// Takes the live parts of `new`; the rest (state directory, session bus, push address) stays
    /// as the supervisor started with it, for the caller to report as needing a restart.
    public func reconfigure(_ new: SupervisorConfiguration) async {
        configuration.driversDirectories = new.driversDirectories
        configuration.drivers = new.drivers
        configuration.discoveryOnDemand = new.discoveryOnDemand
        fleet.directories = new.driversDirectories
        fleet.settings = new.drivers
        await reloadManifests()
        warnAboutUnservedOverrides()
    }

    /// True when the operator (`mediaroute disable`) or the configuration keeps the driver stopped.
    func isDisabled(_ protocolID: String) -> Bool {
        book.isDisabled(protocolID) || configuration.drivers.isDisabled(protocolID)
    }

    /// Stops the drivers the configuration disables.
    func stopDriversDisabledByConfiguration() async {
        for record in fleet.records where configuration.drivers.isDisabled(record.id) {
            // One waiting to be restarted after a crash is not restarted (a start under way stops
            // itself when it ends: `launch` looks again).
            if case .backingOff = record.phase {
                record.cancelTimers(loop)
                record.phase = .stopped
            }
            if let process = record.process {
                logger.info("\(record.manifest.kindName) \(record.id) is disabled in the configuration file; stopping it")
                await stop(process, .disabledByConfiguration)
            }
        }
    }

    /// Settings for a protocol no manifest serves wait for one; said once per start or reload, so a
    /// misspelt protocol id is noticed.
    func warnAboutUnservedOverrides() {
        for protocolID in configuration.drivers.overrides.keys.sorted() where fleet.record(protocolID) == nil {
            logger.warning("the configuration file has settings for \(protocolID), but no driver manifest serves that protocol; they apply when one does")
        }
    }
}
