import Foundation

/// Work done once a campus-local day per campus by whichever server claims the day (the
/// retention service runs it after the retention purge): each module cleans its own tables.
public protocol DailyUpkeep: Sendable {
    /// Named in the upkeep's log line.
    var name: String { get }
    /// Does the day's work for `campus`; returns counts worth logging (`rows_deleted: 3`).
    func run(campus: Campus, now: Date) async throws -> [String: Int]
}
