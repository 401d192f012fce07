import AttestPlugins
import AttestPostgres
import Foundation

/// Campuses: a shared reference table, read before any campus is known (to resolve a slug).
public struct CampusStore: Sendable {
    let client: PostgresClient

    public init(client: PostgresClient) { self.client = client }

    static let columns: SQL = """
        id, slug, name, time_zone, deadline_minute, reminder_minute, email_domains,
        session_lifetime_seconds, retention_days, created_at
        """

    /// Validates and inserts a campus.
    public func create(_ new: NewCampus) async throws -> Campus {
        try Self.validate(new)
        do {
            let rows = try await client.query(
                """
                INSERT INTO campuses (id, slug, name, time_zone, deadline_minute, email_domains)
                VALUES (\(UUID()), \(new.slug), \(new.name), \(new.timeZone), \(new.deadlineMinute), \(new.emailDomains))
                RETURNING \(Self.columns)
                """)
            return try Self.campus(from: rows[0])
        } catch let error as PostgresError where error.isUniqueViolation {
            throw CampusError.duplicateSlug(new.slug)
        }
    }

    public func find(slug: String) async throws -> Campus? {
        let rows = try await client.query("SELECT \(Self.columns) FROM campuses WHERE slug = \(slug)")
        return try rows.first.map(Self.campus(from:))
    }

    public func list() async throws -> [Campus] {
        try await client.query("SELECT \(Self.columns) FROM campuses ORDER BY slug").map(Self.campus(from:))
    }

    public static func validate(_ new: NewCampus) throws {
        guard isValidSlug(new.slug) else { throw CampusError.invalidSlug(new.slug) }
        guard isKnownTimeZone(new.timeZone) else { throw CampusError.unknownTimeZone(new.timeZone) }
        guard (0..<1440).contains(new.deadlineMinute) else { throw CampusError.invalidDeadline(new.deadlineMinute) }
        guard (1...200).contains(new.name.count) else { throw CampusError.invalidName }
    }

    /// 2–40 characters of `[a-z0-9-]`, not starting or ending with `-`.
    public static func isValidSlug(_ slug: String) -> Bool {
        guard (2...40).contains(slug.utf8.count), slug.first != "-", slug.last != "-" else { return false }
        return slug.utf8.allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2D }
    }

    /// Whether the system's tz database knows the zone (`TimeZone(identifier:)` also accepts
    /// abbreviations and offsets such as "EST" or "GMT+2"; a campus needs a real IANA name).
    public static func isKnownTimeZone(_ identifier: String) -> Bool {
        identifier == "UTC" || TimeZone.knownTimeZoneIdentifiers.contains(identifier)
    }

    static func campus(from row: PostgresRow) throws -> Campus {
        Campus(
            id: try row.decode("id"), slug: try row.decode("slug"), name: try row.decode("name"),
            timeZone: try row.decode("time_zone"), deadlineMinute: try row.decode("deadline_minute"),
            reminderMinute: try row.decode("reminder_minute"), emailDomains: try row.decode("email_domains"),
            sessionLifetimeSeconds: try row.decode("session_lifetime_seconds"),
            retentionDays: try row.decode("retention_days"), createdAt: try row.decode("created_at"))
    }
}
