import Foundation
import MediaRouteIPC
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
            do {
                _ = try await driver.call(ToDriver.DataToDevice(session: route.session, application: setup.dataApplication, data: payload))
            } catch let error as RPCError where (1000...1999).contains(error.code.rawValue) {
                // A device error is an answer: the device has no such application, say.
                return .skip("the device refused data for \(setup.dataApplication): \(error) (give --application one it runs)")
            }
            return .pass
        }
        guard sent.outcome == .pass else {
            report.skip(section, "session.dataToApplication carries the session, the application and base64 data (§11.1)", because: "no data reached the device")
            return
        }
        guard let answer = await driver.events.first(["session.dataToApplication"], session: route.session, after: mark, within: Self.answerBound) else {
            report.skip(section, "session.dataToApplication carries the session, the application and base64 data (§11.1)",
                        because: "the device's application sent nothing back within \(Self.answerBound) (it need not)")
            return
        }
        await report.check(section, "session.dataToApplication carries the session, the application and base64 data (§11.1)") {
            let data = try FromDriver.DataToApplication.decode(answer.params)
            guard data.application == setup.dataApplication else { return .fail("addressed to \"\(data.application)\", not \"\(setup.dataApplication)\"") }
            return .pass("\(data.data.byteCount) bytes back")
        }
    }
}
