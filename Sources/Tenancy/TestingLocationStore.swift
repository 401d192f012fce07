import AttestPlugins
import AttestPostgres
import Foundation

/// A campus's own testing locations (`testing_locations`), served by the `static` provider.
public struct TestingLocationStore: Sendable {
    public struct Stored: Sendable {
        public var id: UUID
        public var location: TestingLocation
    }

    /// A line of an import that cannot be stored; nothing was.
    public struct ImportError: Error, CustomStringConvertible {
        public let line: Int
        public let reason: String
        public var description: String { "line \(line): \(reason); nothing was imported" }
    }

    let client: PostgresClient

    public init(client: PostgresClient) { self.client = client }

    /// Parses CSV (header `name,address,lat,lon,hours,phone,url,notes`, in any order; name,
    /// lat and lon required) or a JSON list of the same fields. Every row is checked first.
    public static func parse(_ data: Data) throws -> [TestingLocation] {
        let text = String(decoding: data, as: UTF8.self)
        if text.drop(while: \.isWhitespace).first == "[" {
            guard let items = try? JSONSerialization.jsonObject(with: data) as? [Any] else {
                throw ImportError(line: 1, reason: "not a JSON list of locations")
            }
            return try items.enumerated().map { index, item in
                guard let object = item as? [String: Any],
                    let data = try? JSONSerialization.data(withJSONObject: object),
                    let location = try? JSONDecoder().decode(TestingLocation.self, from: data)
                else { throw ImportError(line: index + 1, reason: "item \(index + 1) needs name (text), lat and lon (numbers)") }
                if let problem = location.problem { throw ImportError(line: index + 1, reason: "item \(index + 1): \(problem)") }
                return location
            }
        }
        let records: [(line: Int, fields: [String])]
        do { records = try CSV.records(text) } catch let error as CSV.UnclosedQuote {
            throw ImportError(line: error.line, reason: "a quoted field is never closed")
        }
        guard let header = records.first else { throw ImportError(line: 1, reason: "the file is empty") }
        let columns = header.fields.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        for required in ["name", "lat", "lon"] where !columns.contains(required) {
            throw ImportError(line: header.line, reason: "the header needs a \(required) column (name,address,lat,lon,hours,phone,url,notes)")
        }
        return try records.dropFirst().filter { !($0.fields.count == 1 && $0.fields[0].isEmpty) }.map { line, fields in
            func field(_ name: String) -> String {
                guard let index = columns.firstIndex(of: name), index < fields.count else { return "" }
                return fields[index].trimmingCharacters(in: .whitespaces)
            }
            guard fields.count <= columns.count else { throw ImportError(line: line, reason: "more fields than the header names") }
            guard let lat = Double(field("lat")), let lon = Double(field("lon")) else {
                throw ImportError(line: line, reason: "lat and lon must be numbers, got \"\(field("lat"))\" and \"\(field("lon"))\"")
            }
            let location = TestingLocation(
                name: field("name"), address: field("address"), latitude: lat, longitude: lon, hours: field("hours"),
                phone: field("phone"), url: field("url"), notes: field("notes"))
            if let problem = location.problem { throw ImportError(line: line, reason: problem) }
            return location
        }
    }

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
                connection, campus: campus.id, actor: actor, action: "locations.remove", target: id?.uuidString.lowercased() ?? "all",
                details: ["removed": "\(removed)"])
            return removed
        }
    }
}
