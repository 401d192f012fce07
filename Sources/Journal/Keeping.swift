import AttestPlugins
import AttestPostgres
import Foundation
import Tenancy

/// How long a member keeps their journal and episodes (`member_settings`): a number of days,
/// or forever (nil, the default). The campus's `retention-days` does not apply to them.
public struct MemberSettingsStore: Sendable {
    let client: PostgresClient

    public init(client: PostgresClient) { self.client = client }

    public static let keepDays: ClosedRange<Int> = 1...3650

    public func journalKeepDays(campus: CampusID, user: UserID) async throws -> Int? {
        try await client.query(
            "SELECT journal_keep_days FROM member_settings WHERE campus_id = \(campus) AND user_id = \(user.rawValue)",
            campus: campus.rawValue
        ).first.flatMap { try $0.decode("journal_keep_days", as: Int32?.self).map(Int.init) }
    }

    /// Sets the member's keeping period (nil: forever); the next daily upkeep applies it.
    public func setJournalKeepDays(campus: CampusID, user: UserID, days: Int?, now: Date) async throws {
        let value = days.map { Int32(clamping: min(max($0, Self.keepDays.lowerBound), Self.keepDays.upperBound)) }
        try await client.query(
            """
            INSERT INTO member_settings (campus_id, user_id, journal_keep_days, updated_at)
            VALUES (\(campus), \(user.rawValue), \(value), \(now))
            ON CONFLICT (campus_id, user_id) DO UPDATE SET journal_keep_days = EXCLUDED.journal_keep_days, updated_at = EXCLUDED.updated_at
            """, campus: campus.rawValue)
    }
}

/// The daily upkeep of members' own data: each member's journal entries dated, and episodes
/// started, before their keeping period are deleted (recordings and nothing else with them),
/// each member in a transaction of their own (the tables admit one member at a time).
public struct JournalUpkeep: DailyUpkeep {
    let client: PostgresClient

    public init(client: PostgresClient) { self.client = client }

    public var name: String { "members' journals" }

    public func run(campus: Campus, now: Date) async throws -> [String: Int] {
        let chosen = try await client.query(
            """
            SELECT user_id, journal_keep_days FROM member_settings
            WHERE campus_id = \(campus.id) AND journal_keep_days IS NOT NULL
            """, campus: campus.id.rawValue)
        let today = campus.localDate(at: now)
        var entries = 0, episodes = 0
        for row in chosen {
            let user = try row.decode("user_id", as: UUID.self)
            let days = Int(try row.decode("journal_keep_days", as: Int32.self))
            let first = today.adding(days: -days)
            let (gone, ended) = try await client.withTransaction(settings: CampusScope.settings(campus.id.rawValue, member: user)) {
                connection in
                (
                    try await connection.query(
                        "DELETE FROM journal_entries WHERE campus_id = \(campus.id) AND user_id = \(user) AND entry_date < \(first)"
                    ).affectedRows,
                    try await connection.query(
                        "DELETE FROM episodes WHERE campus_id = \(campus.id) AND user_id = \(user) AND started_at < \(campus.startOfDay(first))"
                    ).affectedRows
                )
            }
            entries += gone
            episodes += ended
        }
        return ["journal_entries_purged": entries, "episodes_purged": episodes]
    }
}
