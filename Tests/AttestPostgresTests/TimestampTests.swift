import AttestPostgres
import Foundation
import Testing

/// The calendar-free UTC timestamp the submission's 201 uses, against Foundation's.
@Suite struct TimestampTests {
    @Test func timestampsAreWhatISO8601FormatGives() {
        var generator = SystemRandomNumberGenerator()
        let fixed: [TimeInterval] = [0, -1, 86_399.999, 951_782_400, 4_107_542_399, -5_000_000_000, 1_790_000_000.5, 1_709_164_800]
        let random = (0..<2_000).map { _ in TimeInterval(Int64.random(in: -5_000_000_000...8_000_000_000, using: &generator)) + 0.25 }
        for seconds in fixed + random {
            let date = Date(timeIntervalSince1970: seconds)
            #expect(PostgresDate.timestamp(date) == date.ISO8601Format(), "\(seconds)")
        }
    }

    /// A time that is no time (a plugin's NaN, an infinity) or beyond PostgreSQL's range reads
    /// as the range's edge, never a trap.
    @Test func timesOutsidePostgreSQLsRangeReadAsItsEdges() {
        let last = "294276-12-31T23:59:59Z"
        for seconds in [TimeInterval.infinity, .greatestFiniteMagnitude, 1e300, 9.3e12] {
            #expect(PostgresDate.timestamp(Date(timeIntervalSince1970: seconds)) == last, "\(seconds)")
        }
        for seconds in [-TimeInterval.infinity, .nan, -1e300, -2.2e11] {
            #expect(PostgresDate.timestamp(Date(timeIntervalSince1970: seconds)).hasSuffix("-11-24T00:00:00Z"), "\(seconds)")
        }
        // What PostgreSQL can store: its first and last seconds, not a second beyond.
        for seconds in [-210_866_803_200.0, 0, 1.8e9, 9_224_318_015_999] {
            #expect(PostgresDate.holds(Date(timeIntervalSince1970: seconds)), "\(seconds)")
        }
        for seconds in [-210_866_803_201.0, 9_224_318_016_000, -1e20, .nan, .infinity, -.infinity] {
            #expect(!PostgresDate.holds(Date(timeIntervalSince1970: seconds)), "\(seconds)")
        }
    }
}
