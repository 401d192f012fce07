import AttestPlugins
import AttestPostgres
import Foundation
import Tenancy

/// A campus's own testing locations (`testing_locations`), served by the `static` provider.
public struct TestingLocationStore: Sendable {
    public struct Stored: Sendable {
        public var id: UUID
        public var location: TestingLocation
    }

    /// A line of an import that cannot be stored; nothing was.
    public typealias ImportError = TestingLocationFileError

    let client: PostgresClient

    public init(client: PostgresClient) { self.client = client }

    /// Parses a locations file; see `TestingLocation.parseList`.
    public static func parse(_ data: Data) throws -> [TestingLocation] { try TestingLocation.parseList(data) }

    /// Adds locations in one transaction (audited); returns how many.
    public func add(campus: Campus, _ locations: [TestingLocation], actor: String) async throws -> Int {
        try await client.withTransaction(campus: campus.id.rawValue) { connection in
            for location in locations {
                try await connection.query(
                    """
                    INSERT INTO testing_locations (campus_id, id, name, address, latitude, longitude, hours, phone, url, notes)
                    VALUES (\(campus.id), \(UUID()), \(location.name), \(location.address), \(location.latitude), \(location.longitude),
                            \(location.hours), \(location.phone), \(location.url), \(location.notes))
                    """)
            }
            try await AuditLog.record(
                connection, campus: campus.id, actor: actor, action: "locations.import", target: "\(locations.count)")
            return locations.count
        }
    }

    public func list(campus: CampusID) async throws -> [Stored] {
        let rows = try await client.query(
            """
            SELECT id, name, address, latitude, longitude, hours, phone, url, notes FROM testing_locations
            WHERE campus_id = \(campus) ORDER BY name, id
            """, campus: campus.rawValue)
        return try rows.map { row in
            Stored(
                id: try row.decode("id"),
                location: TestingLocation(
                    name: try row.decode("name"), address: try row.decode("address"), latitude: try row.decode("latitude"),
                    longitude: try row.decode("longitude"), hours: try row.decode("hours"), phone: try row.decode("phone"),
                    url: try row.decode("url"), notes: try row.decode("notes")))
        }
    }

    /// Removes one location (by id) or, with nil, all; audited. Returns how many.
    public func remove(campus: Campus, id: UUID?, actor: String) async throws -> Int {
        try await client.withTransaction(campus: campus.id.rawValue) { connection in
            let only: SQL = id.map { "AND id = \($0)" } ?? ""
            let removed = try await connection.query("DELETE FROM testing_locations WHERE campus_id = \(campus.id) \(only)").affectedRows
            try await AuditLog.record(
                connection, campus: campus.id, actor: actor, action: "locations.remove", target: id?.lowercasedText ?? "all",
                details: ["removed": "\(removed)"])
            return removed
        }
    }
}
