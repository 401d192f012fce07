import AttestPlugins
import Foundation
import Testing

@Suite("Campus-local dates")
struct LocalDateTests {
    let newYork = TimeZone(identifier: "America/New_York")!
    let auckland = TimeZone(identifier: "Pacific/Auckland")!

    func instant(_ text: String) throws -> Date { try Date(text, strategy: .iso8601) }

    /// The digits written straight into the string are what the formatting it replaced gave.
    @Test func datesAndIdsAreWrittenAsBefore() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let date = LocalDate(
                year: Int.random(in: 0...9999, using: &generator), month: Int.random(in: 1...12, using: &generator),
                day: Int.random(in: 1...28, using: &generator))
            let year = String(date.year)
            let expected = String(repeating: "0", count: 4 - year.count) + year + String(format: "-%02d-%02d", date.month, date.day)
            #expect(date.description == expected)
            let id = UUID()
            #expect(id.lowercasedText == id.uuidString.lowercased())
        }
        #expect(LocalDate(year: 12_026, month: 1, day: 2).description == "12026-01-02")
        #expect(LocalDate(year: -5, month: 1, day: 2).description == "00-5-01-02")
    }

    /// An instant that is no time, or far beyond any calendar, is taken at a bound: no trap.
    @Test func anInstantThatIsNoTimeStillHasADate() {
        #expect(LocalDate(Date(timeIntervalSince1970: .nan), in: newYork).description == "1969-12-31")
        #expect(LocalDate(Date(timeIntervalSince1970: .infinity), in: newYork).year > 30_000)
        #expect(LocalDate(Date(timeIntervalSince1970: -.infinity), in: newYork).year < -29_000)
    }

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
        // The wall clock jumps from 01:59:59 to 03:00 in New York, and 01:30 comes twice in the fall.
        #expect(LocalDate.secondOfDay(at: try instant("2026-03-08T06:59:59Z"), in: newYork) == 1 * 3600 + 59 * 60 + 59)
        #expect(LocalDate.secondOfDay(at: try instant("2026-03-08T07:00:00Z"), in: newYork) == 3 * 3600)
        #expect(LocalDate.secondOfDay(at: try instant("2026-11-01T05:30:00Z"), in: newYork) == 1 * 3600 + 30 * 60)
        #expect(LocalDate.secondOfDay(at: try instant("2026-11-01T06:30:00Z"), in: newYork) == 1 * 3600 + 30 * 60)
        #expect(LocalDate.secondOfDay(at: Date(timeIntervalSince1970: -0.5), in: .gmt) == 86_399)
    }

    /// Dates and times of day are computed with arithmetic; Foundation's Gregorian calendar is the reference,
    /// over random instants from 1901 to 2199 in zones with DST on either hemisphere, half-hour
    /// and 45-minute offsets, and both sides of the date line.
    @Test func datesAndDayArithmeticAgreeWithFoundationsCalendar() {
        let zones = [
            "UTC", "America/New_York", "Pacific/Auckland", "Pacific/Kiritimati", "Pacific/Honolulu", "Australia/Lord_Howe",
            "Asia/Kathmandu", "America/St_Johns", "America/Santiago", "Europe/London",
        ].map { TimeZone(identifier: $0)! }
        var generator = SystemRandomNumberGenerator()
        for zone in zones {
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = zone
            for _ in 0..<2_000 {
                let instant = Date(timeIntervalSince1970: Double.random(in: -2_170_000_000...7_250_000_000, using: &generator))
                let parts = calendar.dateComponents([.year, .month, .day], from: instant)
                let date = LocalDate(instant, in: zone)
                #expect([date.year, date.month, date.day] == [parts.year, parts.month, parts.day], "\(instant) in \(zone.identifier)")
                let clock = calendar.dateComponents([.hour, .minute, .second], from: instant)
                let second = [clock.hour, clock.minute, clock.second].map { $0 ?? -1 }.reduce(0) { $0 * 60 + $1 }
                #expect(LocalDate.secondOfDay(at: instant, in: zone) == second, "\(instant) in \(zone.identifier)")
            }
        }
        var utc = Calendar(identifier: .gregorian)
        utc.timeZone = .gmt
        for _ in 0..<5_000 {
            let date = LocalDate(
                Date(timeIntervalSince1970: Double.random(in: -2_170_000_000...7_250_000_000, using: &generator)), in: .gmt)
            let count = Int.random(in: -1_500...1_500, using: &generator)
            let start = utc.date(from: DateComponents(year: date.year, month: date.month, day: date.day))!
            let expected = utc.dateComponents([.year, .month, .day], from: utc.date(byAdding: .day, value: count, to: start)!)
            let later = date.adding(days: count)
            #expect([later.year, later.month, later.day] == [expected.year, expected.month, expected.day], "\(date) + \(count)")
            #expect(date.days(until: later) == count)
        }
        // The edges: leap days, the turn of a century that is not a leap year, and one that is.
        #expect(LocalDate("2024-02-28")!.adding(days: 1).description == "2024-02-29")
        #expect(LocalDate("2100-02-28")!.adding(days: 1).description == "2100-03-01")
        #expect(LocalDate("2000-02-28")!.adding(days: 1).description == "2000-02-29")
        #expect(LocalDate("1969-12-31")!.adding(days: 1).description == "1970-01-01")
        #expect(LocalDate(Date(timeIntervalSince1970: -0.5), in: .gmt).description == "1969-12-31")
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
