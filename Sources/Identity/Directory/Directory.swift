import AttestFoundation
import AttestPlugins
import AttestPostgres
import Crypto
import Foundation
import Tenancy

/// What a campus says about provisioning (its `settings`): what a directory's DELETE does
/// (`scim-delete`: `deactivate`, the default, or `erase`), whether only users the directory
/// made may sign in (`provisioning`: `open`, the default, or `scim-only`), and the ID token
/// claim holding the user's groups (`groups-claim`, `groups` by default).
public struct DirectoryPolicy: Sendable, Equatable {
    public enum Delete: String, Sendable { case deactivate, erase }
    public enum Provisioning: String, Sendable {
        case open
        case scimOnly = "scim-only"
    }

    public var delete: Delete = .deactivate
    public var provisioning: Provisioning = .open
    public var groupsClaim = "groups"

    public init(campus: Campus) {
        guard case .object(let settings) = campus.settings.bytes.withUnsafeBytes({ try? JSONValue(parsing: $0) }) ?? .null else { return }
        if case .string(let text)? = settings["scim-delete"], let value = Delete(rawValue: text) { delete = value }
        if case .string(let text)? = settings["provisioning"], let value = Provisioning(rawValue: text) { provisioning = value }
        if case .string(let text)? = settings["groups-claim"], (1...100).contains(text.utf8.count) { groupsClaim = text }
    }
}

/// The campus's users and groups as the university's directory sees them (SCIM 2.0,
/// RFC 7643/7644): each use case of the `/scim/v2/campuses/{campus}/` routes, in one
/// transaction scoped to the campus, audited as `scim:<provisioner>`. Group membership moves
/// roles through the campus's role mappings (`attest campus roles map`).
public struct Directory: Sendable {
    let client: PostgresClient

    public init(client: PostgresClient) { self.client = client }

    /// A resource as the service answers it: its JSON and its version (the ETag).
    public struct Resource: Sendable {
        public var json: JSONValue
        public var version: String
    }

    /// One page of a list.
    public struct Page: Sendable {
        public var total: Int
        public var resources: [Resource]
    }

    // MARK: Users

    static let userColumns: SQL = """
        u.id, u.email, u.user_name, u.external_id, u.display_name, u.active, u.directory, u.created_at, u.modified_at
        """

    /// Where each filterable attribute of a user lives.
    static func userColumn(_ path: SCIMPath) throws(SCIMFilter.Invalid) -> SCIMColumn {
        let enterprise = path.schema?.caseInsensitiveCompare(SCIMSchemas.enterpriseUser) == .orderedSame
        if let schema = path.schema, !enterprise, schema.caseInsensitiveCompare(SCIMSchemas.user) != .orderedSame {
            throw SCIMFilter.Invalid(message: "'\(path)': no schema \(schema) here")
        }
        if enterprise {
            for name in ["employeeNumber", "department"] where path.names(name) {
                return .text("(u.directory->\(SCIMSchemas.enterpriseUser)->>\(name))", caseExact: false)
            }
            throw SCIMFilter.Invalid(message: "'\(path)' is not an attribute this service filters on")
        }
        if path.names("id") { return .text("u.id::text", caseExact: false) }
        if path.names("userName") { return .lowered("u.user_key") }
        if path.names("externalId") { return .text("u.external_id", caseExact: true) }
        if path.names("displayName") { return .text("u.display_name", caseExact: false) }
        if path.names("active") { return .boolean("u.active") }
        if path.attribute.caseInsensitiveCompare("emails") == .orderedSame { return .elements(emails) }
        for name in ["givenName", "familyName", "formatted"] where path.names("name", sub: name) {
            return .text("(u.directory->'name'->>\(name))", caseExact: false)
        }
        if path.names("meta", sub: "created") { return .timestamp("u.created_at") }
        if path.names("meta", sub: "lastModified") { return .timestamp("coalesce(u.modified_at, u.created_at)") }
        if path.attribute.caseInsensitiveCompare("groups") == .orderedSame, path.subAttribute == nil || path.names("groups", sub: "value") {
            return .related(
                exists: "EXISTS (SELECT 1 FROM directory_group_members m WHERE m.campus_id = u.campus_id AND m.user_id = u.id AND",
                id: "m.group_id::text")
        }
        throw SCIMFilter.Invalid(message: "'\(path)' is not an attribute this service filters on")
    }

    /// A user's email addresses as SCIM shows them: the directory's, else the account's as work.
    static let emails: SQL = """
        coalesce(u.directory->'emails', jsonb_build_array(jsonb_build_object('value', u.email, 'type', 'work', 'primary', true)))
        """

    /// `GET /Users`: those matching `filter`, `count` of them from the `startIndex`th (1-based).
    public func users(campus: Campus, filter: SCIMFilter?, startIndex: Int, count: Int, base: String) async throws -> Page {
        let condition: SQL
        do { condition = try filter?.sql(Self.userColumn) ?? "true" } catch { throw SCIMError.invalidFilter(error.message) }
        return try await client.withTransaction(campus: campus.id.rawValue) { connection in
            let total =
                try await connection.query(
                    "SELECT count(*) AS total FROM users u WHERE u.campus_id = \(campus.id) AND u.deprovisioned_at IS NULL AND \(condition)"
                ).first?.decode("total", as: Int.self) ?? 0
            guard count > 0 else { return Page(total: total, resources: []) }
            let rows = try await connection.query(
                """
                SELECT \(Self.userColumns) FROM users u WHERE u.campus_id = \(campus.id) AND u.deprovisioned_at IS NULL AND \(condition)
                ORDER BY u.created_at, u.id OFFSET \(max(0, startIndex - 1)) LIMIT \(count)
                """)
            let users = try rows.map(UserRow.init)
            let groups = try await Self.groupsOf(connection, campus: campus.id, users: users.map(\.id))
            return Page(total: total, resources: users.map { Self.render($0, groups: groups[$0.id] ?? [], base: base) })
        }
    }

    /// `GET /Users/{id}`.
    public func user(campus: Campus, id: UUID, base: String) async throws -> Resource {
        try await client.withTransaction(campus: campus.id.rawValue) { connection in
            let row = try await Self.userRow(connection, campus: campus.id, id: id, lock: false)
            let groups = try await Self.groupsOf(connection, campus: campus.id, users: [id])
            return Self.render(row, groups: groups[id] ?? [], base: base)
        }
    }

    /// `POST /Users`.
    public func createUser(campus: Campus, body: [String: JSONValue], actor: String, base: String, now: Date = Date()) async throws
        -> Resource
    {
        let write = try UserWrite(body, campus: campus)
        let id = UUID()
        let email = write.email ?? Self.placeholderEmail(id)
        do {
            return try await client.withTransaction(campus: campus.id.rawValue) { connection in
                // The directory creating again someone it deleted: the same user, back.
                let deleted = try await connection.query(
                    """
                    SELECT \(Self.userColumns) FROM users u
                    WHERE u.campus_id = \(campus.id) AND u.deprovisioned_at IS NOT NULL
                      AND (u.user_key = lower(\(write.userName)) OR u.email = \(email))
                    ORDER BY u.id LIMIT 1 FOR UPDATE
                    """)
                if let row = try deleted.first.map(UserRow.init) {
                    try await connection.query(
                        "UPDATE users SET deprovisioned_at = NULL WHERE campus_id = \(campus.id) AND id = \(row.id)")
                    var revived = write
                    revived.active = write.active ?? true  // created again: active unless it says not
                    return try await Self.save(connection, campus: campus, row: row, write: revived, groups: [], actor: actor, base: base)
                }
                try await connection.query(
                    """
                    WITH added AS (
                        INSERT INTO users (campus_id, id, email, display_name, user_name, external_id, directory, active, provisioned, modified_at)
                        VALUES (\(campus.id), \(id), \(email), \(write.displayName), \(write.userName), \(write.externalID),
                                \(write.directory), \(write.active ?? true), true, \(now))
                        RETURNING campus_id, created_at, active
                    ), \(UserStore.countAddedMembers(campus: campus.id))
                    SELECT 1 FROM added
                    """)
                try await AuditLog.record(
                    connection, campus: campus.id, actor: actor, action: "scim.user.create", target: email,
                    details: write.active == false ? ["active": "false"] : [:])
                return Self.render(try await Self.userRow(connection, campus: campus.id, id: id, lock: false), groups: [], base: base)
            }
        } catch let error as PostgresError where error.isUniqueViolation {
            throw Self.taken(error, write)
        }
    }

    static func taken(_ error: PostgresError, _ write: UserWrite) -> SCIMError {
        if error.constraint == "users_user_name" { return .uniqueness("userName \(write.userName) is taken at this campus") }
        return .uniqueness("another user of this campus has the email \(write.email ?? "") (or the userName)")
    }

    /// The address of a user the directory gave none (`emails` empty and a userName that is
    /// not one): in the reserved `.invalid` domain (RFC 2606), so nothing is ever sent to it and
    /// no sign-in matches it. Such a user signs in once the directory sends their address.
    static func placeholderEmail(_ id: UUID) -> String { "\(id.lowercasedText)@directory.invalid" }

    static func isPlaceholder(_ email: String) -> Bool { email.hasSuffix("@directory.invalid") }

    /// `PUT /Users/{id}`: every writable attribute as `body` gives it.
    public func replaceUser(campus: Campus, id: UUID, body: [String: JSONValue], ifMatch: String?, actor: String, base: String) async throws
        -> Resource
    {
        try await changeUser(campus: campus, id: id, ifMatch: ifMatch, actor: actor, base: base) { _ in body }
    }

    /// `PATCH /Users/{id}`.
    public func patchUser(
        campus: Campus, id: UUID, operations: [SCIMPatch.Operation], ifMatch: String?, actor: String, base: String
    ) async throws -> Resource {
        // `remove` of `active` unassigns it: the user is active, and it is not shown.
        let unassignsActive = operations.contains { operation in
            operation.kind == .remove && operation.path?.filter == nil && operation.path?.names("active") == true
                && (operation.path?.schema.map { $0.caseInsensitiveCompare(SCIMSchemas.user) == .orderedSame } ?? true)
        }
        return try await changeUser(campus: campus, id: id, ifMatch: ifMatch, actor: actor, base: base, unassignsActive: unassignsActive) {
            (current) throws(SCIMError) -> [String: JSONValue] in
            var document = current
            try SCIMPatch.apply(operations, to: &document, schemas: Self.userSchemas)
            return document
        }
    }

    static let userSchemas: SCIMPatch.Schemas = [
        (SCIMSchemas.user, SCIMSchemas.userAttributes + [SCIMSchemas.Attribute(name: "externalId", kind: .string, description: "")]),
        (SCIMSchemas.enterpriseUser, SCIMSchemas.enterpriseAttributes),
    ]

    func changeUser(
        campus: Campus, id: UUID, ifMatch: String?, actor: String, base: String, unassignsActive: Bool = false,
        change: @Sendable ([String: JSONValue]) throws(SCIMError) -> [String: JSONValue]
    ) async throws -> Resource {
        var attempted: UserWrite?
        do {
            return try await client.withTransaction(campus: campus.id.rawValue) { connection in
                let row = try await Self.userRow(connection, campus: campus.id, id: id, lock: true)
                let groups = try await Self.groupsOf(connection, campus: campus.id, users: [id])
                let current = Self.render(row, groups: groups[id] ?? [], base: base)
                if let ifMatch, !Self.matches(ifMatch, current.version) { throw SCIMError.preconditionFailed }
                guard case .object(let document) = current.json else { throw SCIMError.invalidSyntax("unreadable user") }
                var write = try UserWrite(try change(document), campus: campus)
                if unassignsActive, write.active == nil { write.active = true }
                attempted = write
                return try await Self.save(
                    connection, campus: campus, row: row, write: write, groups: groups[id] ?? [], actor: actor, base: base)
            }
        } catch let error as PostgresError where error.isUniqueViolation {
            throw attempted.map { Self.taken(error, $0) } ?? SCIMError.uniqueness("the userName or email is taken at this campus")
        }
    }

    /// Writes `write` over the user `row` (locked), audited; the user as it is now.
    static func save(
        _ connection: PostgresConnection, campus: Campus, row: UserRow, write: UserWrite, groups: [(UUID, String)], actor: String,
        base: String
    ) async throws -> Resource {
        let id = row.id
        // No address from the directory now: the user keeps the one they sign in with.
        let email = write.email ?? row.email
        try await connection.query(
            """
            UPDATE users SET email = \(email), display_name = \(write.displayName), user_name = \(write.userName),
                external_id = \(write.externalID), directory = \(write.directory), provisioned = true, modified_at = now()
            WHERE campus_id = \(campus.id) AND id = \(id)
            """)
        var details: [String: String] = [:]
        if email != row.email { details["previousEmail"] = row.email }
        // Left out, `active` stays as it is (an operator's deactivation is not undone by a write that does not name it).
        let active = write.active ?? row.active
        if active != row.active {
            let revoked = try await UserStore.changeActive(connection, campus: campus, id: UserID(id), active: active, at: Date())
            details["active"] = "\(active)"
            if !active { details["sessionsRevoked"] = "\(revoked)" }
        }
        if email != row.email || write.displayName != row.displayName || active != row.active {
            try await AuthGenerations.bump(connection, campus: campus.id)
        }
        try await AuditLog.record(
            connection, campus: campus.id, actor: actor,
            action: active != row.active ? (active ? "user.reactivate" : "user.deactivate") : "scim.user.update",
            target: email, details: details.merging(["source": "scim"]) { first, _ in first })
        return render(try await userRow(connection, campus: campus.id, id: id, lock: false), groups: groups, base: base)
    }

    /// `DELETE /Users/{id}`: deactivates, or erases under `scim-delete: erase`. Returns the
    /// member erased, for the modules' `MemberErasure`s to run once this has committed.
    @discardableResult
    public func deleteUser(campus: Campus, id: UUID, ifMatch: String?, actor: String, base: String) async throws -> ErasedMember? {
        let policy = DirectoryPolicy(campus: campus)
        return try await client.withTransaction(campus: campus.id.rawValue) { connection -> ErasedMember? in
            let row = try await Self.userRow(connection, campus: campus.id, id: id, lock: true)
            if let ifMatch {
                let groups = try await Self.groupsOf(connection, campus: campus.id, users: [id])
                guard Self.matches(ifMatch, Self.render(row, groups: groups[id] ?? [], base: base).version) else {
                    throw SCIMError.preconditionFailed
                }
            }
            switch policy.delete {
            case .deactivate:
                var revoked = 0
                if row.active {
                    revoked = try await UserStore.changeActive(connection, campus: campus, id: UserID(id), active: false, at: Date())
                }
                // Gone from the directory's view, and from its groups (with the roles they gave).
                try await connection.query(
                    """
                    UPDATE users SET provisioned = true, modified_at = now(), deprovisioned_at = now()
                    WHERE campus_id = \(campus.id) AND id = \(id)
                    """)
                let left = try await connection.query(
                    "DELETE FROM directory_group_members WHERE campus_id = \(campus.id) AND user_id = \(id) RETURNING group_id")
                if !left.isEmpty {
                    try await Self.recomputeRoles(connection, campus: campus.id, users: [id], source: "scim", actor: actor)
                }
                try await AuthGenerations.bump(connection, campus: campus.id)
                try await AuditLog.record(
                    connection, campus: campus.id, actor: actor, action: "user.deactivate", target: row.email,
                    details: ["source": "scim", "sessionsRevoked": "\(revoked)"])
                return nil
            case .erase:
                let memberID = try await connection.query(
                    "SELECT member_id FROM users WHERE campus_id = \(campus.id) AND id = \(id)"
                ).first?.decode("member_id", as: String?.self)
                try await connection.query("DELETE FROM users WHERE campus_id = \(campus.id) AND id = \(id)")
                if row.active { try await UserStore.countMemberChange(connection, campus: campus, change: -1, at: Date()) }
                let removed = try await connection.query("SELECT attest_forget_audited(\(campus.id), \(row.email)) AS removed")
                try await AuthGenerations.bump(connection, campus: campus.id)
                try await AuditLog.record(
                    connection, campus: campus.id, actor: actor, action: "user.erase", target: id.lowercasedText,
                    details: ["source": "scim", "auditEntriesRemoved": "\(try removed.first?.decode("removed", as: Int.self) ?? 0)"])
                return ErasedMember(id: UserID(id), email: row.email, memberID: memberID)
            }
        }
    }

    /// A user's row as the directory reads it.
    struct UserRow {
        var id: UUID
        var email: String
        var userName: String?
        var externalID: String?
        var displayName: String
        var active: Bool
        var directory: JSONValue?
        var createdAt: Date
        var modifiedAt: Date?

        init(_ row: PostgresRow) throws {
            id = try row.decode("id")
            email = try row.decode("email")
            userName = try row.decode("user_name")
            externalID = try row.decode("external_id")
            displayName = try row.decode("display_name")
            active = try row.decode("active")
            createdAt = try row.decode("created_at")
            modifiedAt = try row.decode("modified_at")
            directory = try row.decode("directory", as: PostgresJSON?.self).flatMap { json in
                json.bytes.withUnsafeBytes { try? JSONValue(parsing: $0) }
            }
        }
    }

    static func userRow(_ connection: PostgresConnection, campus: CampusID, id: UUID, lock: Bool) async throws -> UserRow {
        let rows = try await connection.query(
            """
            SELECT \(userColumns) FROM users u WHERE u.campus_id = \(campus) AND u.id = \(id) AND u.deprovisioned_at IS NULL
            \(unsafeRaw: lock ? "FOR UPDATE" : "")
            """)
        guard let row = rows.first else { throw SCIMError.notFound("user", id.lowercasedText) }
        return try UserRow(row)
    }

    /// The groups of each of `users`: id and displayName.
    static func groupsOf(_ connection: PostgresConnection, campus: CampusID, users: [UUID]) async throws -> [UUID: [(UUID, String)]] {
        guard !users.isEmpty else { return [:] }
        let rows = try await connection.query(
            """
            SELECT m.user_id, g.id, g.display_name FROM directory_group_members m
            JOIN directory_groups g ON g.campus_id = m.campus_id AND g.id = m.group_id
            WHERE m.campus_id = \(campus) AND m.user_id = ANY(\(users)) ORDER BY g.display_name, g.id
            """)
        var groups: [UUID: [(UUID, String)]] = [:]
        for row in rows { groups[try row.decode("user_id"), default: []].append((try row.decode("id"), try row.decode("display_name"))) }
        return groups
    }

    static func render(_ row: UserRow, groups: [(UUID, String)], base: String) -> Resource {
        var object: [String: JSONValue] = [
            "schemas": .array([.string(SCIMSchemas.user)]),
            "id": .string(row.id.lowercasedText),
            "userName": .string(row.userName ?? row.email),
        ]
        // Shown unless the directory left it unassigned and the user is active.
        if row.directory?["active"] != nil || row.directory == nil || !row.active { object["active"] = .bool(row.active) }
        if let external = row.externalID { object["externalId"] = .string(external) }
        if !row.displayName.isEmpty { object["displayName"] = .string(row.displayName) }
        // A user the directory never wrote shows their account's address as the work one; a
        // user it wrote shows the addresses it gave (none, if it gave none).
        let directory = row.directory ?? .object([:])
        if let emails = directory["emails"] {
            object["emails"] = emails
        } else if row.directory == nil, !Self.isPlaceholder(row.email) {
            object["emails"] = .array([.object(["value": .string(row.email), "type": .string("work"), "primary": .bool(true)])])
        }
        if let name = directory["name"] { object["name"] = name }
        if let enterprise = directory[SCIMSchemas.enterpriseUser] {
            object[SCIMSchemas.enterpriseUser] = enterprise
            object["schemas"] = .array([.string(SCIMSchemas.user), .string(SCIMSchemas.enterpriseUser)])
        }
        if !groups.isEmpty {
            object["groups"] = .array(
                groups.map { id, name in
                    .object([
                        "value": .string(id.lowercasedText), "display": .string(name),
                        "$ref": .string("\(base)/Groups/\(id.lowercasedText)"),
                    ])
                })
        }
        let version = Self.version(of: object)
        object["meta"] = .object([
            "resourceType": .string("User"), "created": .string(SCIMTime.format(row.createdAt)),
            "lastModified": .string(SCIMTime.format(row.modifiedAt ?? row.createdAt)),
            "location": .string("\(base)/Users/\(row.id.lowercasedText)"), "version": .string(version),
        ])
        return Resource(json: .object(object), version: version)
    }

    /// A weak ETag: the SHA-256 of the representation (without `meta`), so any change of what
    /// a client sees changes it, whichever path made the change.
    static func version(of object: [String: JSONValue]) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = (try? encoder.encode(JSONValue.object(object))) ?? Data()
        let digest = SHA256.hash(data: data).prefix(12).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
        return "W/\"\(digest)\""
    }

    /// Whether an `If-Match` header names `version` (or is `*`). Weak and strong compare alike.
    public static func matches(_ header: String, _ version: String) -> Bool {
        func bare(_ tag: String) -> String {
            var tag = tag.trimmingCharacters(in: .whitespaces)
            if tag.hasPrefix("W/") { tag.removeFirst(2) }
            return tag
        }
        return header.split(separator: ",").contains { $0.trimmingCharacters(in: .whitespaces) == "*" || bare(String($0)) == bare(version) }
    }

    /// A user's attributes as a write gives them, checked.
    struct UserWrite {
        var userName: String
        var externalID: String?
        /// The address the directory gives (the primary email, else the first of type work,
        /// else the first, else a userName that is one); nil when it gives none.
        var email: String?
        var displayName: String
        /// Whether the user is active, when the write says (a creation that does not is active).
        var active: Bool?
        var directory: PostgresJSON?

        init(_ body: [String: JSONValue], campus: Campus) throws(SCIMError) {
            var core = try SCIMSchemas.clean(body, SCIMSchemas.userAttributes, at: "")
            guard case .string(let rawName)? = core["userName"], !rawName.trimmingCharacters(in: .whitespaces).isEmpty else {
                throw .invalidValue("userName is required: the name the identity provider knows the user by")
            }
            userName = rawName.trimmingCharacters(in: .whitespaces)
            switch SCIMFilter.member("externalId", of: .object(body)) {
            case .string(let text)?:
                guard (1...SCIMSchemas.maxString).contains(text.unicodeScalars.count),
                    !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
                else { throw .invalidValue("externalId must be 1 to \(SCIMSchemas.maxString) characters, without control characters") }
                externalID = text
            case nil, .null?: externalID = nil
            default: throw .invalidValue("externalId must be a string")
            }
            var directory: [String: JSONValue] = [:]
            if let enterprise = SCIMFilter.member(SCIMSchemas.enterpriseUser, of: .object(body)), enterprise != .null {
                guard case .object(let members) = enterprise else { throw .invalidValue("\(SCIMSchemas.enterpriseUser) must be an object") }
                let cleaned = try SCIMSchemas.clean(members, SCIMSchemas.enterpriseAttributes, at: "\(SCIMSchemas.enterpriseUser):")
                if !cleaned.isEmpty { directory[SCIMSchemas.enterpriseUser] = .object(cleaned) }
            }
            if let name = core["name"] { directory["name"] = name }
            var address: String?
            if case .array(let emails)? = core["emails"], !emails.isEmpty {
                let emails = SCIMPatch.onePrimary(emails)
                core["emails"] = .array(emails)
                directory["emails"] = .array(emails)
                let chosen =
                    emails.first { $0["primary"] == .bool(true) } ?? emails.first { $0["type"] == .string("work") } ?? emails[0]
                guard case .string(let value)? = chosen["value"] else {
                    throw .invalidValue("emails: the primary address (or the first) needs a value")
                }
                address = value
            } else if rawName.contains("@"), UserStore.normalizedEmail(userName) != nil {
                address = userName
            }
            // The university's directory is trusted with its own addresses: the campus's email
            // domains govern who may sign in (the ID token's address), not whom it provisions.
            if let address {
                guard let normalized = UserStore.normalizedEmail(address) else {
                    throw .invalidValue("emails: \(address) is not an email address (name@domain)")
                }
                email = normalized
            } else {
                email = nil
            }
            var display = ""
            if case .string(let text)? = core["displayName"] {
                display = text
            } else if case .string(let text)? = core["name"]?["formatted"] {
                display = text
            } else {
                let parts = [core["name"]?["givenName"], core["name"]?["familyName"]].compactMap { value -> String? in
                    if case .string(let text)? = value { text } else { nil }
                }
                display = parts.joined(separator: " ")
            }
            guard UserStore.isStorableName(display) else { throw .invalidValue("displayName must be at most 200 characters") }
            displayName = display
            if case .bool(let flag)? = core["active"] {
                active = flag
                directory["active"] = .bool(flag)  // assigned: shown even while true
            } else {
                active = nil
            }
            // Kept even empty: a user the directory wrote shows what it gave, and nothing it did not.
            self.directory = try? PostgresJSON(encoding: JSONValue.object(directory))
        }
    }
}
