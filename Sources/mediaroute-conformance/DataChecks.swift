import Foundation
import MediaRouteWire

/// §11.2 data in both directions: `session.dataToDevice` is answered; what the device's
/// application sends back (if it does) is a valid `session.dataToApplication`.
struct DataChecks {
    let setup: KitSetup
    let report: ConformanceReport
    let section = "§11.2 Data"
    /// How long the kit waits for the device's application to answer.
    static let answerBound: Duration = .seconds(2)

    func run(on driver: DriverUnderTest, route: ActiveRoute) async {
        let mark = driver.events.mark
        let sent = await report.check(section, "session.dataToDevice is answered") {
            let payload = Base64Payload(Data("conformance: hello from the kit".utf8))
            _ = try await driver.call(ToDriver.DataToDevice(session: route.session, application: setup.application, data: payload))
            return .pass
        }
        guard sent.outcome == .pass else { return }
        guard let answer = await driver.events.first(["session.dataToApplication"], session: route.session, after: mark, within: Self.answerBound) else {
            report.skip(section, "session.dataToApplication carries the session, the application and base64 data (§11.1)",
                        because: "the device's application sent nothing back within \(Self.answerBound) (it need not)")
            return
        }
        await report.check(section, "session.dataToApplication carries the session, the application and base64 data (§11.1)") {
            let data = try FromDriver.DataToApplication.decode(answer.params)
            guard data.application == setup.application else { return .fail("addressed to \"\(data.application)\", not \"\(setup.application)\"") }
            return .pass("\(data.data.byteCount) bytes back")
        }
    }
}
