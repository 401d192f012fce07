import AttestPlugins
import Foundation
import Testing

@Suite("Campus-local dates")
struct LocalDateTests {
    let newYork = TimeZone(identifier: "America/New_York")!
    let auckland = TimeZone(identifier: "Pacific/Auckland")!

    func instant(_ text: String) throws -> Date { try Date(text, strategy: .iso8601) }

    @Test func oneInstantIsADifferentDateOnEachSideOfTheDateLine() throws {
        let now = try instant("2026-06-15T11:30:00Z")
        #expect(LocalDate(now, in: TimeZone(identifier: "Pacific/Kiritimati")!).description == "2026-06-16")  // UTC+14
        #expect(LocalDate(now, in: TimeZone(identifier: "Pacific/Honolulu")!).description == "2026-06-15")  // UTC−10
    }

    @Test func daysAroundDaylightSavingChangesStartAtLocalMidnight() throws {
        // New York springs forward on 2026-03-08 (a 23-hour day) and falls back on 2026-11-01 (25 hours).
        let spring = LocalDate("2026-03-08")!
        #expect(spring.adding(days: 1).start(in: newYork).timeIntervalSince(spring.start(in: newYork)) == 23 * 3600)
        let fall = LocalDate("2026-11-01")!
        #expect(fall.adding(days: 1).start(in: newYork).timeIntervalSince(fall.start(in: newYork)) == 25 * 3600)
        #expect(try spring.start(in: newYork) == instant("2026-03-08T05:00:00Z"))
        #expect(try fall.adding(days: 1).start(in: newYork) == instant("2026-11-02T05:00:00Z"))
        // Auckland ends daylight saving on 2026-04-05 and starts it on 2026-09-27.
        let autumn = LocalDate("2026-04-05")!
        #expect(autumn.adding(days: 1).start(in: auckland).timeIntervalSince(autumn.start(in: auckland)) == 25 * 3600)
        let spring2 = LocalDate("2026-09-27")!
        #expect(spring2.adding(days: 1).start(in: auckland).timeIntervalSince(spring2.start(in: auckland)) == 23 * 3600)
        #expect(LocalDate(try instant("2026-09-26T11:59:59Z"), in: auckland).description == "2026-09-26")
        #expect(LocalDate(try instant("2026-09-26T12:00:00Z"), in: auckland).description == "2026-09-27")
    }

    @Test func parsingArithmeticAndOrder() {
        #expect(LocalDate("2024-02-29") != nil)
        #expect(LocalDate("2023-02-29") == nil)
        #expect(LocalDate("2026-1-01") == nil)
        #expect(LocalDate("2026-12-31")!.adding(days: 1).description == "2027-01-01")
        #expect(LocalDate("2026-03-01")!.adding(days: -1).description == "2026-02-28")
        #expect(LocalDate("2026-11-12")!.days(until: LocalDate("2026-11-21")!) == 9)
        #expect(LocalDate("2026-11-12")! < LocalDate("2026-11-21")!)
    }
}
