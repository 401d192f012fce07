import AttestPlugins
import AttestPostgres
import Foundation

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
