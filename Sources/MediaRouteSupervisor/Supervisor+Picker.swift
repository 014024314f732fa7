import MediaDevice
import MediaRouteIPC

/// Route pickers and the discovery behind them: while one is open, every eligible driver runs
/// and discovers; when the last closes, discovery stops and idle drivers exit after their grace.
extension Supervisor {
    /// Opens a route picker. `onChange` gets the whole list every time it changes, until `closePicker`.
    public func openPicker(onChange: @escaping @Sendable ([PickerEntry]) -> Void) -> (id: Int, entries: [PickerEntry]) {
        let first = pickers.isEmpty
        let id = pickers.open(onChange)
        if first {
            for record in fleet.drivers where isEligible(record) {
                record.cancelIdleTimer(loop)
                beginDiscovery(record)
            }
        }
        return (id, pickerEntries())
    }

    /// Closes a picker; when the last one closes, discovery stops and idle drivers exit after their grace period.
    public func closePicker(_ id: Int) async {
        guard pickers.close(id), pickers.isEmpty else { return }
        for record in fleet.drivers where record.process != nil {
            // A driver whose route waits for its device discovers on.
            if record.isDiscovering && !awaitsReturn(record) {
                record.isDiscovering = false
                _ = try? await call(record, ToDriver.StopDiscovery())
            }
            scheduleIdleExit(record)
        }
    }

    public func pickerEntries() -> [PickerEntry] {
        PickerBoard.entries(of: fleet.drivers, preferences: book.state.preferredProtocols)
    }

    /// Tells open pickers the list changed, at most once per `PickerBoard.coalescing`: a driver
    /// reporting a hundred devices must not send a hundred whole lists to every picker.
    func publishPicker() {
        guard !pickers.isEmpty, pickers.publication == nil else { return }
        // After a quiet spell, on the loop's next turn (so that what the caller changes next goes
        // out with it); otherwise when the window since the last publication ends.
        let now = ContinuousClock.now
        let wait = pickers.lastPublished.map { max(.zero, $0 + PickerBoard.coalescing - now) } ?? .zero
        pickers.publication = loop.schedule(after: wait) { [self] in
            assumeIsolated { supervisor in
                supervisor.pickers.publication = nil
                guard !supervisor.pickers.isEmpty else { return }
                supervisor.pickers.lastPublished = .now
                supervisor.pickers.tell(supervisor.pickerEntries())
            }
        }
    }

    /// Starts discovery on a driver once: the first picker and the driver's own start both ask,
    /// and a driver hears `discovery.start` only once until `discovery.stop`. Returns when the
    /// driver runs and discovers (or could not), also to a caller that found the start under way.
    func startDiscovery(_ record: DriverRecord) async {
        await beginDiscovery(record)?.value
    }

    /// `startDiscovery` without waiting: the start under way (begun now or before), or nil when
    /// there is nothing to start.
    @discardableResult
    func beginDiscovery(_ record: DriverRecord) -> Task<Void, Never>? {
        if let starting = record.discoveryStart { return starting }
        guard isEligible(record), !pickers.isEmpty || awaitsReturn(record), !record.isDiscovering else { return nil }
        // Begun at once: the request reaches the connection now and is written in the loop's next
        // turn (a task enqueued first cost a turn more while the person waits for the list). A
        // start that ended before returning here (the driver could not run) is not kept.
        let ended = StartEnded()
        let start = Task.immediate {
            // Cleared by the start itself, whoever waits for it (or nobody does).
            defer {
                record.discoveryStart = nil
                ended.value = true
            }
            do {
                try await call(record, ToDriver.StartDiscovery())
                if pickers.isEmpty && !awaitsReturn(record) {
                    // The last picker closed (or the wait ended) while discovery was starting.
                    _ = try? await call(record, ToDriver.StopDiscovery())
                    scheduleIdleExit(record)
                } else {
                    record.isDiscovering = true
                }
            } catch {
                logger.error("driver \(record.id) could not start discovery: \(error)")
            }
        }
        if !ended.value { record.discoveryStart = start }
        return start
    }

    /// Whether a task begun with `Task.immediate` ended before it returned.
    private final class StartEnded {
        var value = false
    }

    /// Whether `device` (a picker name or device id) is in the picker, discovering for up to
    /// `configuration.discoveryOnDemand` once the drivers discover, if it is not yet.
    func discover(_ device: String) async -> Bool {
        func listed() -> Bool {
            let key = PickerEntry.key(device)
            return pickerEntries().contains { PickerEntry.key($0.name) == key || $0.routes.contains { $0.device.id == device } }
        }
        if listed() { return true }
        let (changes, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let (picker, _) = openPicker { _ in continuation.yield() }
        let window = Task {
            for record in fleet.drivers where isEligible(record) { await startDiscovery(record) }
            guard !Task.isCancelled else { return }
            // Not cancelled when found: finishing a finished stream does nothing.
            _ = loop.schedule(after: configuration.discoveryOnDemand) { continuation.finish() }
        }
        var found = listed()
        if !found {
            for await _ in changes where listed() {
                found = true
                break
            }
        }
        window.cancel()
        continuation.finish()
        await closePicker(picker)
        return found
    }
}
