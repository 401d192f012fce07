import AttestPlugins
import AttestPostgres
import Foundation
import Tenancy

/// Imported community figures (`community_regions`, `community_days`): public data shared by
/// every campus, a reference table under Citus. `attest community import` writes a dataset
/// whole; the `imported` provider reads it.
public struct CommunityStore: Sendable {
    let client: PostgresClient

    public init(client: PostgresClient) { self.client = client }

    /// What an import stored.
    public struct Imported: Sendable, Equatable {
        public var regions: Int
        public var days: Int
    }

    /// Replaces dataset `name` with `dataset` in one transaction: readers see the old figures
    /// or the new, never a mix, and a failure leaves the old.
    public func replace(dataset name: String, with dataset: CommunityDataset) async throws -> Imported {
        try await client.withTransaction { connection in
            try await connection.query("DELETE FROM community_regions WHERE dataset = \(name)")
            var ids: [String] = [], names: [String] = [], populations: [Int64] = []
            var dayRegions: [String] = [], days: [Int32] = [], cases: [Int32] = [], deaths: [Int32] = []
            var stored = Imported(regions: 0, days: 0)
            func flushRegions() async throws {
                guard !ids.isEmpty else { return }
                try await connection.query(
                    """
                    INSERT INTO community_regions (dataset, region_id, name, population)
                    SELECT \(name), id, name, nullif(population, 0) FROM unnest(\(ids)::text[], \(names)::text[], \(populations)::int8[]) AS t(id, name, population)
                    """)
                stored.regions += ids.count
                ids.removeAll(keepingCapacity: true)
                names.removeAll(keepingCapacity: true)
                populations.removeAll(keepingCapacity: true)
            }
            func flushDays() async throws {
                guard !days.isEmpty else { return }
                try await flushRegions()
                try await connection.query(
                    """
                    INSERT INTO community_days (dataset, region_id, day, new_cases, new_deaths)
                    SELECT \(name), id, DATE '1970-01-01' + day, cases, deaths
                    FROM unnest(\(dayRegions)::text[], \(days)::int4[], \(cases)::int4[], \(deaths)::int4[]) AS t(id, day, cases, deaths)
                    """)
                stored.days += days.count
                dayRegions.removeAll(keepingCapacity: true)
                days.removeAll(keepingCapacity: true)
                cases.removeAll(keepingCapacity: true)
                deaths.removeAll(keepingCapacity: true)
            }
            var regions: [(CommunityRegion, [Int32], [Int32], [Int32])] = []
            dataset.forEachRegion { regions.append(($0, $1, $2, $3)) }
            for (region, regionDays, regionCases, regionDeaths) in regions {
                ids.append(region.id)
                names.append(String(region.name.prefix(200)))
                populations.append(Int64(region.population ?? 0))
                dayRegions += repeatElement(region.id, count: regionDays.count)
                days += regionDays
                cases += regionCases
                deaths += regionDeaths
                if ids.count >= 5_000 { try await flushRegions() }
                if days.count >= 50_000 { try await flushDays() }
            }
            try await flushRegions()
            try await flushDays()
            return stored
        }
    }

    /// A dataset as `attest community list` shows it.
    public struct Summary: Sendable, Equatable {
        public var dataset: String
        public var regions: Int
        public var days: Int
        public var latest: LocalDate?
    }

    /// Deletes dataset `name` whole (its days go with its regions); false when there was none.
    public func remove(dataset name: String) async throws -> Bool {
        try await client.query("DELETE FROM community_regions WHERE dataset = \(name)").affectedRows > 0
    }

    /// Every imported dataset, by name.
    public func datasets() async throws -> [Summary] {
        try await client.query(
            """
            SELECT r.dataset, count(DISTINCT r.region_id)::int8 AS regions, count(d.day)::int8 AS days, max(d.day) AS latest
            FROM community_regions r LEFT JOIN community_days d USING (dataset, region_id)
            GROUP BY r.dataset ORDER BY r.dataset
            """
        ).map { row in
            Summary(
                dataset: try row.decode("dataset"), regions: Int(try row.decode("regions", as: Int64.self)),
                days: Int(try row.decode("days", as: Int64.self)), latest: try row.decode("latest", as: LocalDate?.self))
        }
    }

    /// Region `id` of the first of `datasets` that has it, with its latest `limit` days
    /// (oldest first), or nil.
    public func series(datasets: [String], region id: String, limit: Int = 400) async throws -> CommunitySeries? {
        let rows = try await client.query(
            """
            SELECT r.name, r.population, d.day, d.new_cases, d.new_deaths
            FROM (
                SELECT dataset, region_id, name, population FROM community_regions
                WHERE dataset = ANY(\(datasets)::text[]) AND region_id = \(id)
                ORDER BY array_position(\(datasets)::text[], dataset) LIMIT 1
            ) r
            LEFT JOIN LATERAL (
                SELECT day, new_cases, new_deaths FROM community_days
                WHERE dataset = r.dataset AND region_id = r.region_id ORDER BY day DESC LIMIT \(limit)
            ) d ON true
            """)
        guard let first = rows.first else { return nil }
        let region = CommunityRegion(
            id: id, name: try first.decode("name"), population: try first.decode("population", as: Int64?.self).map { Int(clamping: $0) })
        var days: [CommunityDay] = []
        for row in rows {
            guard let date = try row.decode("day", as: LocalDate?.self) else { continue }
            days.append(
                CommunityDay(
                    date: date, newCases: Int(try row.decode("new_cases", as: Int32.self)),
                    newDeaths: Int(try row.decode("new_deaths", as: Int32.self))))
        }
        days.sort { $0.date < $1.date }
        return CommunitySeries(region: region, days: days)
    }

    /// Regions of `datasets` whose name contains `search` (ignoring case), by name; a region
    /// in two of them is the first's.
    public func regions(datasets: [String], matching search: String, limit: Int) async throws -> [CommunityRegion] {
        var pattern = "%"
        for character in search.lowercased() {
            if character == "%" || character == "_" || character == "\\" { pattern.append("\\") }
            pattern.append(character)
        }
        pattern.append("%")
        return try await client.query(
            """
            SELECT region_id, name, population FROM (
                SELECT DISTINCT ON (region_id) region_id, name, population FROM community_regions
                WHERE dataset = ANY(\(datasets)::text[]) AND lower(name) LIKE \(pattern)
                ORDER BY region_id, array_position(\(datasets)::text[], dataset)
            ) found
            ORDER BY lower(name), region_id LIMIT \(limit)
            """
        ).map { row in
            CommunityRegion(
                id: try row.decode("region_id"), name: try row.decode("name"),
                population: try row.decode("population", as: Int64?.self).map { Int(clamping: $0) })
        }
    }
}
