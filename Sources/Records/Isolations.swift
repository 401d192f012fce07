import AttestPlugins
import AttestPostgres
import Foundation
import Identity
import Tenancy

extension HealthRecords {
    /// An isolation or quarantine as a health officer sees it: started by hand, or by a
    /// positive result (`fromResult`), with its member.
    public struct Restriction: Sendable, Equatable {
        /// The isolation's id, or the positive result's for one a result started.
        public var id: UUID
        public var kind: HealthStatus.RestrictionKind
        public var startsOn: LocalDate
        public var until: LocalDate
        public var fromResult: Bool
        public var email: String
        public var name: String
    }

    /// Starts an isolation or quarantine for the member with `email` by hand, audited: from
    /// `startsOn` (today when nil) until `until` (when nil, the campus's policy: isolation
    /// `isolationDays`, quarantine `quarantineDays` after the start).
    public func start(
        campus: Campus, email: String, kind: HealthStatus.RestrictionKind, startsOn: LocalDate?, until: LocalDate?, actor: String,
        now: Date
    ) async throws -> Restriction {
        let policy = RecordsPolicy(campus: campus)
        let start = startsOn ?? campus.localDate(at: now)
        let end = until ?? start.adding(days: kind == .isolation ? policy.isolationDays : policy.quarantineDays)
        var problems: [RecordsError.Problem] = []
        // An address first: what is none (a control character, a NUL PostgreSQL's text cannot
        // hold) is named, never sent to the database.
        if LabResult.email(email) == nil { problems.append(.init("email", "must be a member's email address")) }
        if end < start { problems.append(.init("until", "is before startsOn")) }
        if start.days(until: end) > RecordsPolicy.days.upperBound {
            problems.append(.init("until", "is more than \(RecordsPolicy.days.upperBound) days after the start"))
        }
        if abs(campus.localDate(at: now).days(until: start)) > 366 { problems.append(.init("startsOn", "must be within a year of today")) }
        guard problems.isEmpty else { throw RecordsError.invalid(problems) }
        let id = UUID()
        let (restriction, changed) = try await changingRecords(of: campus) { connection in
            let rows = try await connection.query(
                """
                INSERT INTO isolations (campus_id, user_id, id, kind, starts_on, ends_on, started_by)
                SELECT u.campus_id, u.id, \(id), \(kind.rawValue), \(start), \(end), \(actor)
                FROM users u WHERE u.campus_id = \(campus.id) AND u.email = \(email.lowercased())
                RETURNING user_id
                """)
            guard let row = rows.first else {
                throw RecordsError.noMember(email: email)
            }
            let user: UUID = try row.decode("user_id")
            try await AuditLog.record(
                connection, campus: campus.id, actor: actor, action: "\(kind.rawValue).start", target: email.lowercased(),
                details: ["id": id.lowercasedText, "from": start.description, "until": end.description])
            let changed = try await Self.recompute(connection, campus: campus, users: [user], policy: policy)
            let restriction = Restriction(
                id: id, kind: kind, startsOn: start, until: end, fromResult: false, email: email.lowercased(), name: "")
            return (restriction, changed)
        }
        if changed > 0 { generations?.advance(campus.id) }
        return restriction
    }

    /// The isolations and quarantines in force on `date` or later, soonest ending first: those
    /// started by hand and those positive results started; audited (each names a person).
    public func restrictions(campus: Campus, on date: LocalDate, actor: String) async throws -> [Restriction] {
        let policy = RecordsPolicy(campus: campus)
        // A result collected before this can no longer hold anyone on `date`.
        let earliest = date.adding(days: -policy.isolationDays - 1).start(in: campus.zone)
        return try await client.withTransaction(campus: campus.id.rawValue) { connection in
            let rows = try await connection.query(
                """
                SELECT s.id, s.kind, s.starts_on, s.ends_on, NULL::timestamptz AS collected_at, u.email, u.display_name
                FROM isolations s JOIN users u ON u.campus_id = s.campus_id AND u.id = s.user_id
                WHERE s.campus_id = \(campus.id) AND s.released_at IS NULL AND s.ends_on >= \(date)
                UNION ALL
                SELECT t.id, 'isolation', NULL, NULL, t.collected_at, u.email, u.display_name
                FROM test_results t JOIN users u ON u.campus_id = t.campus_id AND u.id = t.user_id
                WHERE t.campus_id = \(campus.id) AND t.detected AND t.released_at IS NULL AND t.dismissed_at IS NULL
                  AND t.collected_at >= \(earliest)
                """)
            var found: [Restriction] = []
            for row in rows {
                let kind = HealthStatus.RestrictionKind(rawValue: try row.decode("kind")) ?? .isolation
                let start: LocalDate, end: LocalDate, fromResult: Bool
                if let collected = try row.decode("collected_at", as: Date?.self) {
                    start = LocalDate(collected, in: campus.zone)
                    end = HealthStatusComputation.isolationEnd(collected: collected, policy: policy, zone: campus.zone)
                    fromResult = true
                } else {
                    (start, end, fromResult) = (try row.decode("starts_on"), try row.decode("ends_on"), false)
                }
                guard end >= date else { continue }
                found.append(
                    Restriction(
                        id: try row.decode("id"), kind: kind, startsOn: start, until: end, fromResult: fromResult,
                        email: try row.decode("email"), name: try row.decode("display_name")))
            }
            try await AuditLog.record(
                connection, campus: campus.id, actor: actor, action: "isolations.read", target: "", details: ["count": "\(found.count)"])
            return found.sorted { ($0.until, $0.email) < ($1.until, $1.email) }
        }
    }

    /// Ends an isolation or quarantine early, audited: one started by hand (its id), or the
    /// one a positive result started (the result's id).
    public func release(campus: Campus, id: UUID, actor: String) async throws {
        let policy = RecordsPolicy(campus: campus)
        let changed = try await changingRecords(of: campus) { connection in
            let rows = try await connection.query(
                """
                WITH hand AS (
                    UPDATE isolations SET released_at = now()
                    WHERE campus_id = \(campus.id) AND id = \(id) AND released_at IS NULL
                    RETURNING user_id, kind
                ), result AS (
                    UPDATE test_results SET released_at = now()
                    WHERE campus_id = \(campus.id) AND id = \(id) AND detected AND released_at IS NULL AND user_id IS NOT NULL
                    RETURNING user_id, 'isolation'::text AS kind
                )
                SELECT user_id, kind FROM hand UNION ALL SELECT user_id, kind FROM result
                """)
            guard let row = rows.first else {
                throw RecordsError.notFound(
                    "no such isolation or quarantine in force at this campus: GET …/health/isolations lists them with their ids")
            }
            let user: UUID = try row.decode("user_id")
            try await AuditLog.record(
                connection, campus: campus.id, actor: actor, action: "\(try row.decode("kind") as String).release",
                target: user.lowercasedText,
                details: ["id": id.lowercasedText])
            return try await Self.recompute(connection, campus: campus, users: [user], policy: policy)
        }
        if changed > 0 { generations?.advance(campus.id) }
    }

    /// A member's own record: their tests, newest first (at most `limit`), and the
    /// isolation or quarantine in force, if any.
    public struct MemberRecord: Sendable, Equatable {
        public struct Test: Sendable, Equatable {
            public var id: UUID
            public var code: String
            public var detected: Bool
            public var collectedAt: Date
            public var resultedAt: Date
        }
        public var tests: [Test]
        public var status: HealthStatus
        /// The doses the member's cards gave, by date.
        public var doses: [KeptDose]
    }

    public func record(campus: Campus, user: UserID, limit: Int = 100) async throws -> MemberRecord {
        let rows = try await client.query(
            """
            SELECT t.id, t.test_code, t.detected, t.collected_at, t.resulted_at, NULL::jsonb AS health
            FROM test_results t
            WHERE t.campus_id = \(campus.id) AND t.user_id = \(user) AND t.dismissed_at IS NULL
            UNION ALL
            SELECT NULL, NULL, NULL, NULL, NULL, \(UserStore.health) FROM users u WHERE u.campus_id = \(campus.id) AND u.id = \(user)
            """, campus: campus.id.rawValue)
        var tests: [MemberRecord.Test] = [], status = HealthStatus.none
        for row in rows {
            if let id = try row.decode("id", as: UUID?.self) {
                tests.append(
                    .init(
                        id: id, code: try row.decode("test_code"), detected: try row.decode("detected"),
                        collectedAt: try row.decode("collected_at"), resultedAt: try row.decode("resulted_at")))
            } else {
                status = HealthStatus.stored(try row.decode("health", as: PostgresJSON?.self)) ?? .none
            }
        }
        tests.sort { ($0.collectedAt, $0.resultedAt) > ($1.collectedAt, $1.resultedAt) }
        return MemberRecord(tests: Array(tests.prefix(limit)), status: status, doses: try await doses(campus: campus, user: user))
    }
}
