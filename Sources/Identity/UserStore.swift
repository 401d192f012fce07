import AttestFoundation
import AttestPlugins
import AttestPostgres
import Foundation
import Tenancy

/// Users and their roles at each campus. Every write runs in a transaction scoped to the
/// campus, and every permission change writes its audit entry in the same transaction.
public struct UserStore: Sendable {
    let client: PostgresClient

    public init(client: PostgresClient) { self.client = client }

    static let columns: SQL = """
        u.id, u.campus_id, u.email, u.display_name, u.created_at, u.roles, \(health)
        """

    /// The member `u`'s health status (`member_health`, Records' to write), as a column
    /// `health` of a query over `users u`: null when they have no record.
    public static let health: SQL = """
        (SELECT h.health FROM member_health h WHERE h.campus_id = u.campus_id AND h.user_id = u.id) AS health
        """

    // MARK: Reading

    public func find(campus: CampusID, email: String) async throws -> User? {
        guard let email = Self.normalizedEmail(email) else { return nil }
        let rows = try await client.query(
            "SELECT \(Self.columns) FROM users u WHERE u.campus_id = \(campus) AND u.email = \(email)", campus: campus.rawValue)
        return try rows.first.map(Self.user(from:))
    }

    public func find(campus: CampusID, id: UserID) async throws -> User? {
        let rows = try await client.query(
            "SELECT \(Self.columns) FROM users u WHERE u.campus_id = \(campus) AND u.id = \(id)", campus: campus.rawValue)
        return try rows.first.map(Self.user(from:))
    }

    public func list(campus: CampusID) async throws -> [User] {
        try await client.query(
            "SELECT \(Self.columns) FROM users u WHERE u.campus_id = \(campus) ORDER BY u.email", campus: campus.rawValue
        ).map(Self.user(from:))
    }

    // MARK: Writing

    /// Adds a member (fails if the email, or the campus id `memberID`, is taken).
    public func add(campus: Campus, email rawEmail: String, displayName: String, memberID: String? = nil, actor: String) async throws
        -> User
    {
        let email = try Self.checkedEmail(rawEmail, campus: campus)
        guard Self.isStorableName(displayName) else { throw IdentityError.invalidDisplayName }
        do {
            return try await client.withTransaction(campus: campus.id.rawValue) { connection in
                let user = try await Self.insert(connection, campus: campus.id, email: email, displayName: displayName)
                try await AuditLog.record(connection, campus: campus.id, actor: actor, action: "user.add", target: email)
                if let memberID {
                    try await connection.query(
                        "UPDATE users SET member_id = \(memberID) WHERE campus_id = \(campus.id) AND id = \(user.id)")
                }
                return user
            }
        } catch let error as PostgresError where error.isUniqueViolation {
            if let memberID, try await self.memberIDTaken(campus: campus, memberID: memberID) {
                throw IdentityError.memberIDTaken(memberID)
            }
            throw IdentityError.userExists(email)
        }
    }

    func memberIDTaken(campus: Campus, memberID: String) async throws -> Bool {
        try await !client.query(
            "SELECT 1 FROM users WHERE campus_id = \(campus.id) AND member_id = \(memberID)", campus: campus.id.rawValue
        ).isEmpty
    }

    /// Grants `role`; false when the user had it already (nothing recorded then).
    @discardableResult
    public func grant(campus: Campus, email: String, role: Role, actor: String) async throws -> Bool {
        try await changeRole(campus: campus, email: email, role: role, actor: actor, grant: true)
    }

    /// Revokes `role`; false when the user did not have it.
    @discardableResult
    public func revoke(campus: Campus, email: String, role: Role, actor: String) async throws -> Bool {
        try await changeRole(campus: campus, email: email, role: role, actor: actor, grant: false)
    }

    private func changeRole(campus: Campus, email rawEmail: String, role: Role, actor: String, grant: Bool) async throws -> Bool {
        guard role != .member else { throw IdentityError.memberRoleIsPermanent }
        guard let email = Self.normalizedEmail(rawEmail) else { throw IdentityError.invalidEmail(rawEmail) }
        return try await client.withTransaction(campus: campus.id.rawValue) { connection in
            let userID = try await Self.locked(connection, campus: campus.id, email: email).id
            let changed: PostgresRows
            if grant {
                // A role only a directory group gave becomes the operator's: no group takes it away now.
                changed = try await connection.query(
                    """
                    UPDATE users SET
                        roles = CASE WHEN \(role.rawValue)::text = ANY(roles) THEN roles ELSE roles || \(role.rawValue)::text END,
                        directory_roles = array_remove(directory_roles, \(role.rawValue)::text)
                    WHERE campus_id = \(campus.id) AND id = \(userID)
                      AND (NOT \(role.rawValue)::text = ANY(roles) OR \(role.rawValue)::text = ANY(directory_roles))
                    """)
            } else {
                changed = try await connection.query(
                    """
                    UPDATE users SET roles = array_remove(roles, \(role.rawValue)::text),
                        directory_roles = array_remove(directory_roles, \(role.rawValue)::text)
                    WHERE campus_id = \(campus.id) AND id = \(userID) AND \(role.rawValue)::text = ANY(roles)
                    """)
            }
            guard changed.affectedRows > 0 else { return false }
            try await AuthGenerations.bump(connection, campus: campus.id)
            try await AuditLog.record(
                connection, campus: campus.id, actor: actor, action: grant ? "role.grant" : "role.revoke", target: email,
                details: ["role": role.rawValue])
            return true
        }
    }

    /// What an import did.
    public struct ImportReport: Sendable, Codable, Equatable {
        public var created: Int
        public var updated: Int
        public var rolesGranted: Int
    }

    /// Imports `email,name[,roles]` rows (roles separated by `;`), all or nothing: every line
    /// is checked first, and a bad one names its line number and nothing is written. Existing
    /// users get the new name; listed roles are added, none are taken away.
    public func importCSV(campus: Campus, text: String, actor: String) async throws -> ImportReport {
        let entries = try Self.parseImport(text, campus: campus)
        let emails = entries.map(\.email), names = entries.map(\.name)
        var roleEmails: [String] = [], roleNames: [String] = []
        for entry in entries {
            for role in entry.roles where role != .member {
                roleEmails.append(entry.email)
                roleNames.append(role.rawValue)
            }
        }
        return try await client.withTransaction(campus: campus.id.rawValue) { connection in
            let upserted = try await connection.query(
                """
                WITH upserted AS (
                    INSERT INTO users (campus_id, id, email, display_name)
                    SELECT \(campus.id), gen_random_uuid(), e.email, e.name FROM unnest(\(emails), \(names)) AS e(email, name)
                    ON CONFLICT (campus_id, email) DO UPDATE SET display_name = EXCLUDED.display_name
                    RETURNING campus_id, created_at, active, (xmax = 0) AS inserted
                ), added AS (
                    SELECT campus_id, created_at, active FROM upserted WHERE inserted
                ), \(Self.countAddedMembers(campus: campus.id))
                SELECT inserted FROM upserted
                """)
            let created = try upserted.filter { try $0.decode("inserted", as: Bool.self) }.count
            // New users are members (the column's default); listed roles they lack are added.
            let granted = try await connection.query(
                """
                WITH wanted AS (
                    SELECT DISTINCT u.id, g.role
                    FROM unnest(\(roleEmails), \(roleNames)) AS g(email, role)
                    JOIN users u ON u.campus_id = \(campus.id) AND u.email = g.email
                    WHERE NOT g.role = ANY(u.roles)
                ), added AS (
                    UPDATE users u SET roles = u.roles || w.roles
                    FROM (SELECT id, array_agg(role ORDER BY role) AS roles FROM wanted GROUP BY id) w
                    WHERE u.campus_id = \(campus.id) AND u.id = w.id
                )
                SELECT count(*) AS granted FROM wanted
                """)
            let report = ImportReport(
                created: created, updated: entries.count - created, rolesGranted: try granted.first?.decode("granted", as: Int.self) ?? 0)
            if report.updated > 0 || report.rolesGranted > 0 { try await AuthGenerations.bump(connection, campus: campus.id) }
            try await AuditLog.record(
                connection, campus: campus.id, actor: actor, action: "users.import", target: "\(entries.count) rows",
                details: ["created": "\(report.created)", "updated": "\(report.updated)", "rolesGranted": "\(report.rolesGranted)"])
            return report
        }
    }

    // MARK: Lifecycle

    /// Deactivates (`active: false`) or reactivates the user `email`, audited. A deactivated
    /// user cannot sign in, loses every session (revoked, and the campus's sign-in generation
    /// moved on, so no server keeps one), gets no reminders, opens no shared link, and is
    /// counted apart from the active members from today. `changed` is false when the user was
    /// so already.
    public func setActive(
        campus: Campus, email rawEmail: String, active: Bool, actor: String, at now: Date = Date()
    ) async throws -> (changed: Bool, sessionsRevoked: Int) {
        guard let email = Self.normalizedEmail(rawEmail) else { throw IdentityError.invalidEmail(rawEmail) }
        return try await client.withTransaction(campus: campus.id.rawValue) { connection in
            let (id, wasActive) = try await Self.locked(connection, campus: campus.id, email: email)
            guard wasActive != active else { return (false, 0) }
            let revoked = try await Self.changeActive(connection, campus: campus, id: id, active: active, at: now)
            try await AuthGenerations.bump(connection, campus: campus.id)
            try await AuditLog.record(
                connection, campus: campus.id, actor: actor, action: active ? "user.reactivate" : "user.deactivate", target: email,
                details: active ? [:] : ["sessionsRevoked": "\(revoked)"])
            return (true, revoked)
        }
    }

    /// Turns the user `id` (locked by the caller, and not already so) active or not; a
    /// deactivation revokes every session. Returns how many sessions it revoked. The caller
    /// moves the campus's sign-in generation on and audits.
    static func changeActive(_ connection: PostgresConnection, campus: Campus, id: UserID, active: Bool, at now: Date) async throws -> Int {
        // Reactivated, a user the directory had deleted is the directory's again.
        try await connection.query(
            """
            UPDATE users SET active = \(active), deprovisioned_at = CASE WHEN \(active) THEN NULL ELSE deprovisioned_at END
            WHERE campus_id = \(campus.id) AND id = \(id)
            """)
        var revoked = 0
        if !active {
            revoked = try await connection.query(
                "UPDATE sessions SET revoked_at = \(now) WHERE campus_id = \(campus.id) AND user_id = \(id) AND revoked_at IS NULL"
            ).affectedRows
        }
        try await countMemberChange(connection, campus: campus, change: active ? 1 : -1, at: now)
        return revoked
    }

    /// Erases the user `email`: their row, and with it every row of theirs (attestations,
    /// sessions, journal entries and recordings, episodes, links and their openings,
    /// settings); the audit log keeps only that an erasure happened (the entries naming them
    /// are removed, then one `user.erase` naming their id, which names nobody now). The day's
    /// rollups keep their counts, which name nobody. Run it on the schema owner's client: the
    /// audit log is append-only for the application role.
    public func erase(campus: Campus, email rawEmail: String, actor: String, at now: Date = Date()) async throws -> (
        id: UserID, auditEntriesRemoved: Int
    ) {
        guard let email = Self.normalizedEmail(rawEmail) else { throw IdentityError.invalidEmail(rawEmail) }
        return try await client.withTransaction(campus: campus.id.rawValue) { connection in
            let (id, wasActive) = try await Self.locked(connection, campus: campus.id, email: email)
            try await connection.query("DELETE FROM users WHERE campus_id = \(campus.id) AND id = \(id)")
            if wasActive { try await Self.countMemberChange(connection, campus: campus, change: -1, at: now) }
            let removed = try await connection.query(
                "DELETE FROM audit_log WHERE campus_id = \(campus.id) AND (target = \(email) OR actor = \("user:" + email))"
            ).affectedRows
            try await AuthGenerations.bump(connection, campus: campus.id)
            try await AuditLog.record(
                connection, campus: campus.id, actor: actor, action: "user.erase", target: id.rawValue.lowercasedText,
                details: ["auditEntriesRemoved": "\(removed)"])
            return (id, removed)
        }
    }

    /// Whether each user of `campus` is active, by id.
    public func activity(campus: CampusID) async throws -> [UserID: Bool] {
        var active: [UserID: Bool] = [:]
        for row in try await client.query("SELECT id, active FROM users WHERE campus_id = \(campus)", campus: campus.rawValue) {
            active[try row.decode("id")] = try row.decode("active")
        }
        return active
    }

    /// The user `email` (normalized), their row locked for the transaction; `userNotFound` else.
    static func locked(_ connection: PostgresConnection, campus: CampusID, email: String) async throws -> (id: UserID, active: Bool) {
        let rows = try await connection.query("SELECT id, active FROM users WHERE campus_id = \(campus) AND email = \(email) FOR UPDATE")
        guard let row = rows.first else { throw IdentityError.userNotFound(email) }
        return (try row.decode("id"), try row.decode("active"))
    }

    /// How many users `campus` has, active or not.
    public func count(campus: CampusID) async throws -> Int {
        let rows = try await client.query("SELECT count(*)::int AS n FROM users WHERE campus_id = \(campus)", campus: campus.rawValue)
        return try rows.first?.decode("n") ?? 0
    }

    /// One member more (+1) or fewer (−1) from the campus-local day of `now` on.
    static func countMemberChange(_ connection: PostgresConnection, campus: Campus, change: Int, at now: Date) async throws {
        try await connection.query(
            """
            INSERT INTO member_changes AS m (campus_id, local_date, change) VALUES (\(campus.id), \(campus.localDate(at: now)), \(change))
            ON CONFLICT (campus_id, local_date) DO UPDATE SET change = m.change + EXCLUDED.change
            """)
    }

    // MARK: Sign-in

    /// The user a verified ID token stands for: found by issuer and subject, else linked by
    /// (verified) email to a user an operator added, else created with the member role.
    /// Later sign-ins keep the display name current.
    public func onboard(campus: Campus, identity: VerifiedIdentity) async throws -> User {
        let scimOnly = DirectoryPolicy(campus: campus).provisioning == .scimOnly
        for attempt in 1...2 {
            do {
                return try await client.withTransaction(campus: campus.id.rawValue) { connection in
                    let bySubject = try await connection.query(
                        """
                        SELECT id, display_name, active, provisioned FROM users
                        WHERE campus_id = \(campus.id) AND oidc_issuer = \(identity.issuer) AND oidc_subject = \(identity.subject)
                        """)
                    let userID: UserID
                    if let row = bySubject.first {
                        guard try row.decode("active", as: Bool.self) else { throw IdentityError.deactivated }
                        if scimOnly, try !row.decode("provisioned", as: Bool.self) { throw IdentityError.notProvisioned }
                        userID = try row.decode("id")
                        if let name = identity.name, try row.decode("display_name", as: String.self) != name {
                            try await connection.query(
                                "UPDATE users SET display_name = \(name) WHERE campus_id = \(campus.id) AND id = \(userID)")
                            try await AuthGenerations.bump(connection, campus: campus.id)
                        }
                    } else {
                        var byEmail = try await connection.query(
                            """
                            SELECT id, oidc_subject, active, provisioned, email FROM users
                            WHERE campus_id = \(campus.id) AND email = \(identity.email)
                            """)
                        if byEmail.isEmpty {
                            // A user the directory made whose externalId is this subject (Okta
                            // sends its user id as both), not yet linked to any sign-in.
                            let byDirectoryID = try await connection.query(
                                """
                                SELECT id, oidc_subject, active, provisioned, email FROM users
                                WHERE campus_id = \(campus.id) AND external_id = \(identity.subject) AND provisioned AND oidc_subject IS NULL
                                LIMIT 2
                                """)
                            if byDirectoryID.count == 1 { byEmail = byDirectoryID }
                        }
                        if let row = byEmail.first {
                            guard try row.decode("active", as: Bool.self) else { throw IdentityError.deactivated }
                            if scimOnly, try !row.decode("provisioned", as: Bool.self) { throw IdentityError.notProvisioned }
                            guard try row.decode("oidc_subject", as: String?.self) == nil else {
                                throw IdentityError.identityConflict
                            }
                            userID = try row.decode("id")
                            // A directory's user without an address takes the token's (verified) one.
                            let email = Directory.isPlaceholder(try row.decode("email", as: String.self)) ? identity.email : nil
                            try await connection.query(
                                """
                                UPDATE users SET oidc_issuer = \(identity.issuer), oidc_subject = \(identity.subject),
                                    display_name = CASE WHEN \(identity.name ?? "") = '' THEN display_name ELSE \(identity.name ?? "") END,
                                    email = coalesce(\(email), email)
                                WHERE campus_id = \(campus.id) AND id = \(userID)
                                """)

                            try await AuthGenerations.bump(connection, campus: campus.id)
                        } else {
                            if scimOnly { throw IdentityError.notProvisioned }
                            let user = try await Self.insert(
                                connection, campus: campus.id, email: identity.email, displayName: identity.name ?? "",
                                issuer: identity.issuer, subject: identity.subject)
                            try await AuditLog.record(
                                connection, campus: campus.id, actor: "user:\(identity.email)", action: "user.onboard",
                                target: identity.email, details: ["issuer": identity.issuer])
                            try await Self.keepBirthDate(connection, campus: campus.id, user: user.id, identity: identity)
                            guard let groups = identity.groups, !groups.isEmpty else { return user }
                            userID = user.id
                        }
                    }
                    try await Self.keepBirthDate(connection, campus: campus.id, user: userID, identity: identity)
                    if let groups = identity.groups {
                        try await Directory.claimGroups(
                            connection, campus: campus.id, user: userID, groups: groups, actor: "user:\(identity.email)")
                    }
                    let rows = try await connection.query(
                        "SELECT \(Self.columns) FROM users u WHERE u.campus_id = \(campus.id) AND u.id = \(userID)")
                    return try Self.user(from: rows[0])
                }
            } catch let error as PostgresError where error.isUniqueViolation && attempt == 1 {
                continue  // a concurrent first sign-in created the user; find it now
            }
        }
        throw IdentityError.userExists(identity.email)
    }

    /// Keeps the identity provider's `birthdate` claim, when it sent one (a SMART Health
    /// Card's birth date is compared with it).
    static func keepBirthDate(_ connection: PostgresConnection, campus: CampusID, user: UserID, identity: VerifiedIdentity) async throws {
        guard let birthDate = identity.birthDate else { return }
        try await connection.query(
            """
            UPDATE users SET birth_date = \(birthDate)
            WHERE campus_id = \(campus) AND id = \(user) AND birth_date IS DISTINCT FROM \(birthDate)
            """)
    }

    /// A member's campus id, nil when they have none (or no member has `email`).
    public func memberID(campus: Campus, email: String) async throws -> String? {
        try await client.query(
            "SELECT member_id FROM users WHERE campus_id = \(campus.id) AND email = \(email.lowercased())", campus: campus.id.rawValue
        ).first?.decode("member_id", as: String?.self)
    }

    /// Sets or clears a member's birth date (`attest user birth-date`), audited; false when
    /// no member has `email`.
    public func setBirthDate(campus: Campus, email: String, birthDate: LocalDate?, actor: String) async throws -> Bool {
        try await client.withTransaction(campus: campus.id.rawValue) { connection in
            let rows = try await connection.query(
                """
                UPDATE users SET birth_date = \(birthDate)
                WHERE campus_id = \(campus.id) AND email = \(email.lowercased()) RETURNING id
                """)
            guard !rows.isEmpty else { return false }
            try await AuditLog.record(
                connection, campus: campus.id, actor: actor, action: birthDate == nil ? "user.birth-date.clear" : "user.birth-date.set",
                target: email.lowercased(), details: [:])
            return true
        }
    }

    // MARK: Helpers

    /// The active members of `campus` (a `SELECT` of `user_id`), for statements of other
    /// modules that address members (reminders).
    public static func activeMembers(campus: CampusID) -> SQL {
        "SELECT u.id AS user_id FROM users u WHERE u.campus_id = \(campus) AND u.active"
    }

    /// How many active members `campus` had before `from` (a row whose `local_date` is
    /// null) and what changed on each day from `from` to `to` (`local_date`, `change`): the
    /// read of `member_changes` the dashboard's active counts splice into their pipeline.
    public static func memberChanges(campus: CampusID, from: LocalDate, to: LocalDate) -> SQL {
        """
        SELECT NULL::date AS local_date, coalesce(sum(change), 0)::bigint AS change
        FROM member_changes WHERE campus_id = \(campus) AND local_date < \(from)
        UNION ALL
        SELECT local_date, change::bigint FROM member_changes
        WHERE campus_id = \(campus) AND local_date BETWEEN \(from) AND \(to)
        """
    }

    /// Counts members added by the same statement into `member_changes` (+1 on the campus-local
    /// day of each active member's `created_at`): spliced as a CTE after a CTE named `added`
    /// that returns `campus_id`, `created_at` and `active` of the rows it inserted. Every
    /// statement that adds users carries it (the import, onboarding, the history seed), so the
    /// dashboard's active counts need no trigger on `users` (Citus refuses triggers there).
    /// A statement that deactivates, reactivates or deletes members writes its −1/+1 in the
    /// same transaction (`countMemberChange`).
    public static func countAddedMembers(campus: CampusID) -> SQL {
        """
        counted AS (
            INSERT INTO member_changes AS m (campus_id, local_date, change)
            SELECT a.campus_id, (a.created_at AT TIME ZONE c.time_zone)::date, count(*)
            FROM added a JOIN campuses c ON c.id = a.campus_id
            WHERE a.active AND a.campus_id = \(campus) AND c.id = \(campus)
            GROUP BY 1, 2 ORDER BY 1, 2
            ON CONFLICT (campus_id, local_date) DO UPDATE SET change = m.change + EXCLUDED.change
        )
        """
    }

    static func insert(
        _ connection: PostgresConnection, campus: CampusID, email: String, displayName: String,
        issuer: String? = nil, subject: String? = nil
    ) async throws -> User {
        let id = UserID(UUID())
        let rows = try await connection.query(
            """
            WITH added AS (
                INSERT INTO users (campus_id, id, email, display_name, oidc_issuer, oidc_subject)
                VALUES (\(campus), \(id), \(email), \(displayName), \(issuer), \(subject))
                RETURNING campus_id, created_at, active
            ), \(Self.countAddedMembers(campus: campus))
            SELECT created_at FROM added
            """)
        return User(
            id: id, campusID: campus, email: email, displayName: displayName, roles: [.member], createdAt: try rows[0].decode("created_at"))
    }

    static func user(from row: PostgresRow) throws -> User {
        let roleNames: [String] = try row.decode("roles")
        let roles = roleNames.compactMap(Role.init(rawValue:)).sorted()
        return User(
            id: try row.decode("id"), campusID: try row.decode("campus_id"), email: try row.decode("email"),
            displayName: try row.decode("display_name"), roles: roles == memberOnly ? memberOnly : roles,
            createdAt: try row.decode("created_at"), health: try HealthStatus.stored(row.decode("health", as: PostgresJSON?.self)))
    }

    /// Most users' roles, one array for all of them (servers keep many users' sessions).
    static let memberOnly: [Role] = [.member]

    /// At most 200 Unicode scalars (as the column counts), none of them a control character.
    static func isStorableName(_ name: String) -> Bool {
        name.unicodeScalars.count <= VerifiedIdentity.maxNameScalars
            && !name.unicodeScalars.contains { $0.properties.generalCategory == .control }
    }

    /// Trimmed and lower-cased, or nil when it is not a plausible address.
    public static func normalizedEmail(_ text: String) -> String? {
        let email = text.trimmingCharacters(in: .whitespaces).lowercased()
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, (1...64).contains(parts[0].utf8.count), email.utf8.count <= 254,
            parts[0].unicodeScalars.allSatisfy({
                $0.isASCII && $0.value > 32 && $0.value < 127 && !"()<>[]:;\\,\"".unicodeScalars.contains($0)
            }),
            CampusFormats.isEmailDomain(String(parts[1]))
        else { return nil }
        return email
    }

    /// The normalised email, after checking it is allowed at `campus`.
    static func checkedEmail(_ text: String, campus: Campus) throws -> String {
        guard let email = normalizedEmail(text) else { throw IdentityError.invalidEmail(text) }
        let domain = String(email.split(separator: "@")[1])
        if !campus.emailDomains.isEmpty, !campus.emailDomains.contains(domain) {
            throw IdentityError.emailDomainNotAllowed(email: email, allowed: campus.emailDomains)
        }
        return email
    }

    struct ImportEntry {
        var email: String
        var name: String
        var roles: [Role]
    }

    static func parseImport(_ text: String, campus: Campus) throws -> [ImportEntry] {
        var entries: [ImportEntry] = []
        var seen: [String: Int] = [:]
        let records: [(line: Int, fields: [String])]
        do { records = try CSV.records(text) } catch let error as CSV.UnclosedQuote {
            throw IdentityError.importFailed(line: error.line, reason: "a quoted field is never closed")
        }
        for (line, fields) in records {
            if fields.allSatisfy({ $0.trimmingCharacters(in: .whitespaces).isEmpty }) { continue }
            if entries.isEmpty, seen.isEmpty, fields.first?.trimmingCharacters(in: .whitespaces).lowercased() == "email" { continue }
            guard (2...3).contains(fields.count) else {
                throw IdentityError.importFailed(
                    line: line, reason: "expected 2 or 3 columns (email,name[,roles]), found \(fields.count)\(CSV.separatorHint(fields))")
            }
            let email: String
            do { email = try checkedEmail(fields[0], campus: campus) } catch let error as IdentityError {
                throw IdentityError.importFailed(line: line, reason: "\(error)")
            }
            if let first = seen[email] {
                throw IdentityError.importFailed(line: line, reason: "\(email) appears again (first on line \(first))")
            }
            let name = fields[1].trimmingCharacters(in: .whitespaces)
            guard Self.isStorableName(name) else {
                throw IdentityError.importFailed(line: line, reason: "the name must be at most 200 characters, without control characters")
            }
            var roles: [Role] = []
            if fields.count == 3 {
                for token in fields[2].split(whereSeparator: { $0 == ";" || $0 == " " || $0 == "|" }) {
                    guard let role = Role(parsing: String(token)) else {
                        throw IdentityError.importFailed(line: line, reason: "\(IdentityError.unknownRole(String(token)))")
                    }
                    roles.append(role)
                }
            }
            seen[email] = line
            entries.append(ImportEntry(email: email, name: name, roles: roles))
        }
        return entries
    }
}
