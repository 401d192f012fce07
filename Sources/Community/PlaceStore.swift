import AttestPlugins
import AttestPostgres
import Foundation
import Tenancy

/// The regions a member follows on the community page (`member_places`), in their order, at
/// most `limit`. Seen by that member only: every statement names the campus and the member,
/// and row-level security admits that member's row alone.
public struct PlaceStore: Sendable {
    let client: PostgresClient

    public init(client: PostgresClient) { self.client = client }

    /// How many places a member may follow.
    public static let limit = 10

    public func regions(campus: CampusID, user: UserID) async throws -> [String] {
        try await client.query(
            "SELECT regions FROM member_places WHERE campus_id = \(campus) AND user_id = \(user.rawValue)",
            settings: CampusScope.settings(campus.rawValue, member: user.rawValue)
        ).first.map { try $0.decode("regions", as: [String].self) } ?? []
    }

    /// Replaces the member's places with `regions` (checked by the caller: valid ids, at most
    /// `limit`, no repeats).
    public func set(campus: CampusID, user: UserID, regions: [String], now: Date) async throws {
        try await client.query(
            """
            INSERT INTO member_places (campus_id, user_id, regions, updated_at)
            VALUES (\(campus), \(user.rawValue), \(regions)::text[], \(now))
            ON CONFLICT (campus_id, user_id) DO UPDATE SET regions = EXCLUDED.regions, updated_at = EXCLUDED.updated_at
            """, settings: CampusScope.settings(campus.rawValue, member: user.rawValue))
    }
}
