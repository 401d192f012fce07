import AttestPlugins
import AttestPostgres
import Foundation

/// Campuses: a shared reference table, read before any campus is known (to resolve a slug).
public struct CampusStore: Sendable {
    let client: PostgresClient

    public init(client: PostgresClient) { self.client = client }

    static let columns: SQL = """
        id, slug, name, time_zone, deadline_minute, reminder_minute, email_domains,
        session_lifetime_seconds, retention_days, stats_min_count, settings, created_at, community_region
        """

    /// Validates and inserts a campus, recording who created it in its audit log. `setUp`
    /// runs in the same transaction, for what other modules keep per campus (its badge key).
    public func create(
        _ new: NewCampus, actor: String = "system",
        setUp: (PostgresConnection, CampusID) async throws -> Void = { _, _ in }
    ) async throws -> Campus {
        try Self.validate(new)
        let id = CampusID(UUID())
        do {
            return try await client.withTransaction(campus: id.rawValue) { connection in
                let rows = try await connection.query(
                    """
                    INSERT INTO campuses (id, slug, name, time_zone, deadline_minute, email_domains)
                    VALUES (\(id), \(new.slug), \(new.name), \(new.timeZone), \(new.deadlineMinute), \(new.emailDomains))
                    RETURNING \(Self.columns)
                    """)
                try await AuditLog.record(connection, campus: id, actor: actor, action: "campus.create", target: new.slug)
                try await setUp(connection, id)
                return try Self.campus(from: rows[0])
            }
        } catch let error as PostgresError where error.isUniqueViolation {
            throw CampusError.duplicateSlug(new.slug)
        }
    }

    /// The campus a slug names. Row-level security hides every campus but the one a
    /// transaction names, so the lookup goes through `attest_campus_by_slug`, the schema's
    /// one door for it.
    public func find(slug: String) async throws -> Campus? {
        guard Self.isValidSlug(slug) else { return nil }
        let rows = try await client.query("SELECT \(Self.columns) FROM attest_campus_by_slug(\(slug))")
        return try rows.first.map(Self.campus(from:))
    }

    /// The campus, or `CampusError.notFound`.
    public func require(slug: String) async throws -> Campus {
        guard let campus = try await find(slug: slug) else { throw CampusError.notFound(slug) }
        return campus
    }

    /// Deletes `campus` inside `connection`'s transaction, the schema owner's (the server's role
    /// may not delete a campus): its members and every row of theirs, its keys, settings,
    /// outbox and audit log go with it (each of its tables refers to the campus or to its
    /// members, `ON DELETE CASCADE`). What refers to neither (a result that matched no member)
    /// its owner deletes first. Returns how many members it had; `attest campus erase`.
    public static func erase(_ connection: PostgresConnection, campus: CampusID) async throws -> Int {
        let members = try await connection.query("SELECT count(*)::int AS n FROM users WHERE campus_id = \(campus)")
        try await connection.query("DELETE FROM campuses WHERE id = \(campus)")
        return try members.first?.decode("n") ?? 0
    }

    /// A due time already passed (the schema's default for `next_…_at`): the work is looked at
    /// by the next round of whichever server, which sets the real one.
    static let dueNow = Date(timeIntervalSince1970: 0)

    /// The campus with this id, read with that campus set (what a worker that learned a
    /// campus's id from a cross-campus door reads next).
    public func find(id: CampusID) async throws -> Campus? {
        try await client.query("SELECT \(Self.columns) FROM campuses WHERE id = \(id)", campus: id.rawValue).first.map(Self.campus(from:))
    }

    /// Every campus, by slug: for the servers' background work and the operator's CLI,
    /// through `attest_campus_directory` (row-level security shows a request one campus).
    public func list() async throws -> [Campus] {
        try await client.query("SELECT \(Self.columns) FROM attest_campus_directory()").map(Self.campus(from:))
    }

    /// Changes one setting (validated) and records it in the campus's audit log.
    public func set(slug: String, key: String, value: String, actor: String) async throws -> Campus {
        guard let setting = CampusSetting(rawValue: key) else { throw CampusError.unknownSetting(key: key) }
        let assignment = try Self.assignment(setting, value)
        let campus = try await require(slug: slug)
        return try await client.withTransaction(campus: campus.id.rawValue) { connection in
            let rows = try await connection.query(
                "UPDATE campuses SET \(assignment) WHERE id = \(campus.id) RETURNING \(Self.columns)")
            try await AuditLog.record(
                connection, campus: campus.id, actor: actor, action: "campus.set", target: slug,
                details: ["key": key, "value": value])
            return try Self.campus(from: rows[0])
        }
    }

    /// The settings kept among the campus's `settings` object, each set with a key of its own.
    static let keptInSettings: Set<CampusSetting> = [
        .scimDelete, .provisioning, .groupsClaim, .guests, .guestDailyCap, .guestRetentionDays, .guestContact,
    ]

    /// `column = $n` for a setting, after checking the value.
    static func assignment(_ setting: CampusSetting, _ value: String) throws -> SQL {
        func invalid(_ expected: String) -> CampusError {
            .invalidSetting(key: setting.rawValue, value: value, expected: expected)
        }
        switch setting {
        case .name:
            guard isValidName(value) else { throw CampusError.invalidName }
            return "name = \(value)"
        case .timezone:
            guard isKnownTimeZone(value) else { throw CampusError.unknownTimeZone(value) }
            // The daily work's due times follow the zone: due now, the day's claims keep it once.
            return "time_zone = \(value), next_reminder_at = \(Self.dueNow), next_upkeep_at = \(Self.dueNow)"
        case .deadline, .reminder:
            guard let minute = CampusFormats.minute(fromClock: value) else {
                throw CampusError.invalidTime(key: setting.rawValue, value: value)
            }
            return setting == .deadline
                ? "deadline_minute = \(minute)" : "reminder_minute = \(minute), next_reminder_at = \(Self.dueNow)"
        case .emailDomains:
            let domains = value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            for domain in domains where !CampusFormats.isEmailDomain(domain) { throw CampusError.invalidEmailDomain(domain) }
            return "email_domains = \(domains)"
        case .sessionLifetime:
            guard let seconds = CampusFormats.seconds(fromDuration: value), seconds >= 300 else {
                throw invalid("a duration from 5m to 366d, such as 12h or 30d")
            }
            return "session_lifetime_seconds = \(seconds)"
        case .retentionDays:
            guard let days = Int(value), (1...3650).contains(days) else { throw invalid("a whole number of days from 1 to 3650") }
            return "retention_days = \(days)"
        case .statsMinCount:
            guard let count = Int(value), (0...10_000).contains(count) else { throw invalid("a whole number from 0 to 10000") }
            return "stats_min_count = \(count)"
        case .settings:
            let parsed = Result { () throws(JSONSyntaxError) in try JSONValue(parsing: Array(value.utf8)) }
            guard case .success(.object(let fields)) = parsed else {
                // Said why when it is not JSON at all ("a number too large for a double at byte 17").
                let why = if case .failure(let error) = parsed { " (this is not JSON: \(error))" } else { "" }
                throw invalid("a JSON object such as {\"key\": \"value\"}" + why)
            }
            // The settings named by keys of their own are set through them, checked.
            if let named = fields.keys.sorted().first(where: { CampusSetting(rawValue: $0).map(keptInSettings.contains) == true }) {
                throw invalid(
                    "a JSON object without \"\(named)\", which is set (and checked) with its own key: attest campus set <slug> \(named) <value>"
                )
            }
            // Merged into what the campus has (its other settings stay); a key given null is removed.
            let removed = fields.filter { $0.value == .null }.map(\.key).sorted()
            return "settings = (settings || \(PostgresJSON(value))) - \(removed)::text[]"
        case .scimDelete, .provisioning, .groupsClaim:
            let allowed: [String]
            switch setting {
            case .scimDelete: allowed = ["deactivate", "erase"]
            case .provisioning: allowed = ["open", "scim-only"]
            default: allowed = []
            }
            if allowed.isEmpty {
                guard (1...100).contains(value.utf8.count),
                    value.unicodeScalars.allSatisfy({ $0.isASCII && $0.value > 32 && $0.value < 127 })
                else { throw invalid("a claim name such as groups or roles (1 to 100 printable ASCII characters)") }
            } else {
                guard allowed.contains(value) else { throw invalid(allowed.joined(separator: " or ")) }
            }
            // Kept among the campus's settings, beside the others there.
            return "settings = settings || jsonb_build_object(\(setting.rawValue)::text, \(value)::text)"
        case .guests, .guestDailyCap, .guestRetentionDays, .guestContact:
            switch setting {
            case .guests: guard ["on", "off"].contains(value) else { throw invalid("on or off") }
            case .guestDailyCap:
                guard let cap = Int(value), (0...100_000).contains(cap) else { throw invalid("a whole number of visits from 0 to 100000") }
            case .guestRetentionDays:
                guard let days = Int(value), (1...3650).contains(days) else { throw invalid("a whole number of days from 1 to 3650") }
            default:
                guard (1...200).contains(value.count), !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
                else { throw invalid("whom to contact, 1 to 200 characters on one line, such as \"the front desk, +1 212 555 0100\"") }
            }
            return "settings = settings || jsonb_build_object(\(setting.rawValue)::text, \(value)::text)"
        case .region:
            if value == "none" || value.isEmpty { return "community_region = NULL" }
            guard CommunityRegion.isValidID(value) else {
                throw invalid(
                    "a region id of the campus's community-data provider (1 to 64 letters, digits or ._:-, such as the county FIPS code 36061), or none"
                )
            }
            return "community_region = \(value)"
        }
    }

    public static func validate(_ new: NewCampus) throws {
        guard isValidSlug(new.slug) else { throw CampusError.invalidSlug(new.slug) }
        guard isValidName(new.name) else { throw CampusError.invalidName }
        guard isKnownTimeZone(new.timeZone) else { throw CampusError.unknownTimeZone(new.timeZone) }
        guard (0..<1440).contains(new.deadlineMinute) else {
            throw CampusError.invalidTime(key: "deadline", value: "\(new.deadlineMinute) minutes")
        }
        for domain in new.emailDomains where !CampusFormats.isEmailDomain(domain) {
            throw CampusError.invalidEmailDomain(domain)
        }
    }

    /// 2–40 characters of `[a-z0-9-]`, not starting or ending with `-`.
    public static func isValidSlug(_ slug: String) -> Bool {
        guard (2...40).contains(slug.utf8.count), slug.first != "-", slug.last != "-" else { return false }
        return slug.utf8.allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2D }
    }

    /// A campus's name: shown in every page's title, each email's subject and the poster, so
    /// 1 to 200 characters on one line, not only spaces.
    public static func isValidName(_ name: String) -> Bool {
        (1...200).contains(name.count) && !name.allSatisfy(\.isWhitespace)
            && !name.unicodeScalars.contains {
                $0.properties.generalCategory == .control || $0.properties.generalCategory == .lineSeparator
                    || $0.properties.generalCategory == .paragraphSeparator
            }
    }

    /// Whether the zone is a place the tz database names ("Area/Location"), or UTC.
    /// `TimeZone(identifier:)` alone also accepts abbreviations and offsets such as "EST" or
    /// "GMT+2"; a campus needs a real IANA name. ICU's list of known zones leaves out some of
    /// the database's own names (Asia/Kolkata: it lists Asia/Calcutta), so a name of that shape
    /// that Foundation opens as itself is one too. The `Etc/` zones (fixed offsets whose sign
    /// is the reverse of what they look like) are not places.
    public static func isKnownTimeZone(_ identifier: String) -> Bool {
        if identifier == "UTC" || TimeZone.knownTimeZoneIdentifiers.contains(identifier) { return true }
        let parts = identifier.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0] != "Etc", identifier.utf8.count <= 64,
            parts.allSatisfy({ part in
                !part.isEmpty
                    && part.utf8.allSatisfy {
                        (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x5F || $0 == 0x2D
                    }
            })
        else { return false }
        return TimeZone(identifier: identifier)?.identifier == identifier
    }

    static func campus(from row: PostgresRow) throws -> Campus {
        Campus(
            id: try row.decode("id"), slug: try row.decode("slug"), name: try row.decode("name"),
            timeZone: try row.decode("time_zone"), deadlineMinute: try row.decode("deadline_minute"),
            reminderMinute: try row.decode("reminder_minute"), emailDomains: try row.decode("email_domains"),
            sessionLifetimeSeconds: try row.decode("session_lifetime_seconds"),
            retentionDays: try row.decode("retention_days"), statsMinCount: try row.decode("stats_min_count"),
            settings: try row.decode("settings"), createdAt: try row.decode("created_at"),
            communityRegion: try row.decode("community_region", as: String?.self))
    }
}
