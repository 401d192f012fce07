import AttestPlugins
import AttestPostgres
import Foundation
import Tenancy

/// One row of the outbox: an event for one sink.
public struct OutboxEntry: Sendable {
    public var id: UUID
    public var sink: String
    public var event: String
    public var attempts: Int
    public var createdAt: Date
    public var nextAttemptAt: Date
    public var deliveredAt: Date?
    public var deadAt: Date?
    public var lastError: String?
}

/// What operators see and do with a campus's outbox (`attest outbox`).
public struct OutboxStore: Sendable {
    public enum State: String, Sendable, CaseIterable {
        case pending, dead, delivered
    }

    let client: PostgresClient

    public init(client: PostgresClient) { self.client = client }

    public func list(campus: CampusID, state: State, limit: Int = 100) async throws -> [OutboxEntry] {
        let filter: SQL =
            switch state {
            case .pending: "delivered_at IS NULL AND dead_at IS NULL"
            case .dead: "dead_at IS NOT NULL"
            case .delivered: "delivered_at IS NOT NULL"
            }
        let rows = try await client.query(
            """
            SELECT id, sink_id, event, attempts, created_at, next_attempt_at, delivered_at, dead_at, last_error
            FROM notification_outbox WHERE campus_id = \(campus) AND \(filter)
            ORDER BY created_at DESC LIMIT \(limit)
            """, campus: campus.rawValue)
        return try rows.map { row in
            OutboxEntry(
                id: try row.decode("id"), sink: try row.decode("sink_id"), event: try row.decode("event"),
                attempts: try row.decode("attempts"), createdAt: try row.decode("created_at"),
                nextAttemptAt: try row.decode("next_attempt_at"), deliveredAt: try row.decode("delivered_at"),
                deadAt: try row.decode("dead_at"), lastError: try row.decode("last_error"))
        }
    }

    /// Puts dead letters (all, or one event's) back in line with a fresh delivery window.
    /// Returns how many.
    public func retry(campus: CampusID, event: UUID? = nil) async throws -> Int {
        let only: SQL = event.map { "AND id = \($0)" } ?? ""
        let rows = try await client.query(
            """
            UPDATE notification_outbox
            SET dead_at = NULL, attempts = 0, window_start = now(), next_attempt_at = now(), last_error = NULL
            WHERE campus_id = \(campus) AND dead_at IS NOT NULL \(only)
            """, campus: campus.rawValue)
        return rows.affectedRows
    }
}

/// A campus's outbox kept small and brief (the daily upkeep): a delivered event goes
/// `deliveredDays` (7) after its delivery, a dead letter `deadDays` (30) after it died (time to
/// mend the sink and `attest outbox retry`), neither later than the campus's `retention-days`
/// (an event names a member, and a `badge.red` their badge); and a day's reminder runs go after
/// a week. Deleted 10,000 rows a statement, so a first run on a long-kept outbox holds no lock
/// for long.
public struct OutboxUpkeep: DailyUpkeep {
    public static let deliveredDays = 7
    public static let deadDays = 30
    static let slice = 10_000

    let client: PostgresClient

    public init(client: PostgresClient) { self.client = client }

    public var name: String { "outbox" }

    public func run(campus: Campus, now: Date) async throws -> [String: Int] {
        func before(days: Int) -> Date { now.addingTimeInterval(-Double(min(days, max(campus.retentionDays, 1))) * 86_400) }
        let delivered = before(days: Self.deliveredDays), dead = before(days: Self.deadDays)
        var purged = 0
        while true {
            let gone = try await client.query(
                """
                DELETE FROM notification_outbox o USING (
                    SELECT id, sink_id FROM notification_outbox
                    WHERE campus_id = \(campus.id) AND (delivered_at < \(delivered) OR dead_at < \(dead))
                    LIMIT \(Self.slice)
                ) old
                WHERE o.campus_id = \(campus.id) AND o.id = old.id AND o.sink_id = old.sink_id
                """, campus: campus.id.rawValue
            ).affectedRows
            purged += gone
            if gone < Self.slice { break }
        }
        let runs = try await client.query(
            "DELETE FROM reminder_runs WHERE campus_id = \(campus.id) AND local_date < \(campus.localDate(at: now).adding(days: -7))",
            campus: campus.id.rawValue
        ).affectedRows
        return ["outbox_purged": purged, "reminder_runs_purged": runs]
    }
}

/// An erased member's events in the outbox (delivered, dead or still waiting): each names them
/// (`userId`), and a `badge.red` their badge. One scan of the campus's outbox, which the daily
/// upkeep keeps to about a week.
public struct OutboxErasure: MemberErasure {
    let client: PostgresClient

    public init(client: PostgresClient) { self.client = client }

    public func forget(_ member: ErasedMember, campus: Campus) async throws -> [String: Int] {
        let gone = try await client.query(
            """
            DELETE FROM notification_outbox WHERE campus_id = \(campus.id) AND payload->>'userId' = \(member.id.rawValue.lowercasedText)
            """, campus: campus.id.rawValue
        ).affectedRows
        return ["outboxEvents": gone]
    }
}
