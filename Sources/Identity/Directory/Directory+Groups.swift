import AttestFoundation
import AttestPlugins
import AttestPostgres
import Foundation
import Tenancy

extension Directory {
    // MARK: Groups

    static func groupColumn(_ path: SCIMPath) throws(SCIMFilter.Invalid) -> SCIMColumn {
        if let schema = path.schema, schema.caseInsensitiveCompare(SCIMSchemas.group) != .orderedSame {
            throw SCIMFilter.Invalid(message: "'\(path)': no schema \(schema) here")
        }
        if path.names("id") { return .text("g.id::text", caseExact: false) }
        if path.names("displayName") { return .text("g.display_name", caseExact: false) }
        if path.names("externalId") { return .text("g.external_id", caseExact: true) }
        if path.names("meta", sub: "created") { return .timestamp("g.created_at") }
        if path.names("meta", sub: "lastModified") { return .timestamp("g.modified_at") }
        if path.attribute.caseInsensitiveCompare("members") == .orderedSame, path.subAttribute == nil || path.names("members", sub: "value")
        {
            return .related(
                exists: "EXISTS (SELECT 1 FROM directory_group_members m WHERE m.campus_id = g.campus_id AND m.group_id = g.id AND",
                id: "m.user_id::text")
        }
        throw SCIMFilter.Invalid(message: "'\(path)' is not an attribute this service filters on")
    }

    struct GroupRow {
        var id: UUID
        var displayName: String
        var externalID: String?
        var createdAt: Date
        var modifiedAt: Date

        init(_ row: PostgresRow) throws {
            id = try row.decode("id")
            displayName = try row.decode("display_name")
            externalID = try row.decode("external_id")
            createdAt = try row.decode("created_at")
            modifiedAt = try row.decode("modified_at")
        }
    }

    static let groupColumns: SQL = "g.id, g.display_name, g.external_id, g.created_at, g.modified_at"

    /// `GET /Groups`; `members: false` leaves members out (`excludedAttributes=members`).
    public func groups(campus: Campus, filter: SCIMFilter?, startIndex: Int, count: Int, members: Bool, base: String) async throws -> Page {
        let condition: SQL
        do { condition = try filter?.sql(Self.groupColumn) ?? "true" } catch { throw SCIMError.invalidFilter(error.message) }
        return try await client.withTransaction(campus: campus.id.rawValue) { connection in
            let total =
                try await connection.query(
                    "SELECT count(*) AS total FROM directory_groups g WHERE g.campus_id = \(campus.id) AND \(condition)"
                ).first?.decode("total", as: Int.self) ?? 0
            guard count > 0 else { return Page(total: total, resources: []) }
            let rows = try await connection.query(
                """
                SELECT \(Self.groupColumns) FROM directory_groups g WHERE g.campus_id = \(campus.id) AND \(condition)
                ORDER BY g.created_at, g.id OFFSET \(max(0, startIndex - 1)) LIMIT \(count)
                """)
            let groups = try rows.map(GroupRow.init)
            let memberships = members ? try await Self.members(connection, campus: campus.id, groups: groups.map(\.id)) : [:]
            return Page(
                total: total,
                resources: groups.map { Self.render($0, members: members ? memberships[$0.id] ?? [] : nil, base: base) })
        }
    }

    /// `GET /Groups/{id}`.
    public func group(campus: Campus, id: UUID, members: Bool, base: String) async throws -> Resource {
        try await client.withTransaction(campus: campus.id.rawValue) { connection in
            let row = try await Self.groupRow(connection, campus: campus.id, id: id, lock: false)
            let memberships = members ? try await Self.members(connection, campus: campus.id, groups: [id]) : [:]
            return Self.render(row, members: members ? memberships[id] ?? [] : nil, base: base)
        }
    }

    /// `POST /Groups`.
    public func createGroup(campus: Campus, body: [String: JSONValue], actor: String, base: String) async throws -> Resource {
        let write = try GroupWrite(body)
        let id = UUID()
        return try await client.withTransaction(campus: campus.id.rawValue) { connection in
            try await connection.query(
                """
                INSERT INTO directory_groups (campus_id, id, display_name, external_id)
                VALUES (\(campus.id), \(id), \(write.displayName), \(write.externalID))
                """)
            let added = try await Self.setMembers(connection, campus: campus.id, group: id, to: write.members, from: [])
            try await AuditLog.record(
                connection, campus: campus.id, actor: actor, action: "scim.group.create", target: write.displayName,
                details: ["members": "\(added.count)"])
            try await Self.recomputeRoles(connection, campus: campus.id, users: added, source: "scim", actor: actor)
            let row = try await Self.groupRow(connection, campus: campus.id, id: id, lock: false)
            return Self.render(row, members: try await Self.members(connection, campus: campus.id, groups: [id])[id] ?? [], base: base)
        }
    }

    /// `PUT /Groups/{id}`.
    public func replaceGroup(campus: Campus, id: UUID, body: [String: JSONValue], ifMatch: String?, actor: String, base: String)
        async throws -> Resource
    {
        try await changeGroup(campus: campus, id: id, ifMatch: ifMatch, actor: actor, base: base) { _ in body }
    }

    /// `PATCH /Groups/{id}`: members added and removed, the name replaced.
    public func patchGroup(
        campus: Campus, id: UUID, operations: [SCIMPatch.Operation], ifMatch: String?, actor: String, base: String
    ) async throws -> Resource {
        try await changeGroup(campus: campus, id: id, ifMatch: ifMatch, actor: actor, base: base) {
            (current) throws(SCIMError) -> [String: JSONValue] in
            var document = current
            try SCIMPatch.apply(operations, to: &document, schemas: Self.groupSchemas)
            return document
        }
    }

    static let groupSchemas: SCIMPatch.Schemas = [
        (SCIMSchemas.group, SCIMSchemas.groupAttributes + [SCIMSchemas.Attribute(name: "externalId", kind: .string, description: "")])
    ]

    func changeGroup(
        campus: Campus, id: UUID, ifMatch: String?, actor: String, base: String,
        change: @Sendable ([String: JSONValue]) throws(SCIMError) -> [String: JSONValue]
    ) async throws -> Resource {
        try await client.withTransaction(campus: campus.id.rawValue) { connection in
            let row = try await Self.groupRow(connection, campus: campus.id, id: id, lock: true)
            if let ifMatch, !Self.matches(ifMatch, Self.render(row, members: nil, base: base).version) {
                throw SCIMError.preconditionFailed
            }
            let before = try await connection.query(
                "SELECT user_id FROM directory_group_members WHERE campus_id = \(campus.id) AND group_id = \(id)"
            ).map { try $0.decode("user_id", as: UUID.self) }
            var document: [String: JSONValue] = ["displayName": .string(row.displayName)]
            if let external = row.externalID { document["externalId"] = .string(external) }
            if !before.isEmpty { document["members"] = .array(before.map { .object(["value": .string($0.lowercasedText)]) }) }
            let write = try GroupWrite(try change(document))
            try await connection.query(
                """
                UPDATE directory_groups SET display_name = \(write.displayName), external_id = \(write.externalID), modified_at = clock_timestamp()
                WHERE campus_id = \(campus.id) AND id = \(id)
                """)
            let changed = try await Self.setMembers(connection, campus: campus.id, group: id, to: write.members, from: before)
            try await AuditLog.record(
                connection, campus: campus.id, actor: actor, action: "scim.group.update", target: write.displayName,
                details: ["membersChanged": "\(changed.count)"])
            // A renamed group may give other roles to all its members.
            let affected =
                write.displayName != row.displayName || write.externalID != row.externalID ? Array(Set(before).union(changed)) : changed
            try await Self.recomputeRoles(connection, campus: campus.id, users: affected, source: "scim", actor: actor)
            let updated = try await Self.groupRow(connection, campus: campus.id, id: id, lock: false)
            return Self.render(updated, members: try await Self.members(connection, campus: campus.id, groups: [id])[id] ?? [], base: base)
        }
    }

    /// `DELETE /Groups/{id}`: its members lose the roles it gave.
    public func deleteGroup(campus: Campus, id: UUID, ifMatch: String?, actor: String, base: String) async throws {
        try await client.withTransaction(campus: campus.id.rawValue) { connection in
            let row = try await Self.groupRow(connection, campus: campus.id, id: id, lock: true)
            if let ifMatch, !Self.matches(ifMatch, Self.render(row, members: nil, base: base).version) {
                throw SCIMError.preconditionFailed
            }
            let members = try await connection.query(
                "DELETE FROM directory_group_members WHERE campus_id = \(campus.id) AND group_id = \(id) RETURNING user_id"
            ).map { try $0.decode("user_id", as: UUID.self) }
            try await connection.query("DELETE FROM directory_groups WHERE campus_id = \(campus.id) AND id = \(id)")
            try await AuditLog.record(
                connection, campus: campus.id, actor: actor, action: "scim.group.delete", target: row.displayName,
                details: ["members": "\(members.count)"])
            try await Self.recomputeRoles(connection, campus: campus.id, users: members, source: "scim", actor: actor)
        }
    }

    /// Makes the group's members `wanted` (each a user of the campus), given they were
    /// `before`; returns the users added or removed.
    static func setMembers(_ connection: PostgresConnection, campus: CampusID, group: UUID, to wanted: [UUID], from before: [UUID])
        async throws
        -> [UUID]
    {
        let old = Set(before), new = Set(wanted)
        let added = Array(new.subtracting(old)), removed = Array(old.subtracting(new))
        if !added.isEmpty {
            let known =
                try await connection.query(
                    "SELECT count(*) AS known FROM users WHERE campus_id = \(campus) AND id = ANY(\(added)) AND deprovisioned_at IS NULL"
                ).first?.decode("known", as: Int.self) ?? 0
            if known != added.count {
                let found = Set(
                    try await connection.query(
                        "SELECT id FROM users WHERE campus_id = \(campus) AND id = ANY(\(added)) AND deprovisioned_at IS NULL"
                    ).map {
                        try $0.decode("id", as: UUID.self)
                    })
                let missing = added.first { !found.contains($0) }.map(\.lowercasedText) ?? "?"
                throw SCIMError.invalidValue("members: no user of this campus has the id \(missing)")
            }
            try await connection.query(
                """
                INSERT INTO directory_group_members (campus_id, group_id, user_id)
                SELECT \(campus), \(group), unnest(\(added)::uuid[])
                """)
        }
        if !removed.isEmpty {
            try await connection.query(
                "DELETE FROM directory_group_members WHERE campus_id = \(campus) AND group_id = \(group) AND user_id = ANY(\(removed))")
        }
        return added + removed
    }

    static func groupRow(_ connection: PostgresConnection, campus: CampusID, id: UUID, lock: Bool) async throws -> GroupRow {
        let rows = try await connection.query(
            """
            SELECT \(groupColumns) FROM directory_groups g WHERE g.campus_id = \(campus) AND g.id = \(id) \(unsafeRaw: lock ? "FOR UPDATE" : "")
            """)
        guard let row = rows.first else { throw SCIMError.notFound("group", id.lowercasedText) }
        return try GroupRow(row)
    }

    /// Each group's members: id and displayName.
    static func members(_ connection: PostgresConnection, campus: CampusID, groups: [UUID]) async throws -> [UUID: [(UUID, String)]] {
        guard !groups.isEmpty else { return [:] }
        let rows = try await connection.query(
            """
            SELECT m.group_id, u.id, u.display_name FROM directory_group_members m
            JOIN users u ON u.campus_id = m.campus_id AND u.id = m.user_id
            WHERE m.campus_id = \(campus) AND m.group_id = ANY(\(groups)) ORDER BY u.id
            """)
        var members: [UUID: [(UUID, String)]] = [:]
        for row in rows { members[try row.decode("group_id"), default: []].append((try row.decode("id"), try row.decode("display_name"))) }
        return members
    }

    /// The version covers the name, the externalId and when the members last changed (a
    /// group's version is known without reading every member).
    static func render(_ row: GroupRow, members: [(UUID, String)]?, base: String) -> Resource {
        var object: [String: JSONValue] = [
            "schemas": .array([.string(SCIMSchemas.group)]), "id": .string(row.id.lowercasedText), "displayName": .string(row.displayName),
        ]
        if let external = row.externalID { object["externalId"] = .string(external) }
        var versioned = object
        versioned["modified"] = .string(SCIMTime.format(row.modifiedAt))
        let version = Self.version(of: versioned)
        if let members, !members.isEmpty {
            object["members"] = .array(
                members.map { id, name in
                    var member: [String: JSONValue] = [
                        "value": .string(id.lowercasedText), "type": .string("User"), "$ref": .string("\(base)/Users/\(id.lowercasedText)"),
                    ]
                    if !name.isEmpty { member["display"] = .string(name) }
                    return .object(member)
                })
        }
        object["meta"] = .object([
            "resourceType": .string("Group"), "created": .string(SCIMTime.format(row.createdAt)),
            "lastModified": .string(SCIMTime.format(row.modifiedAt)), "location": .string("\(base)/Groups/\(row.id.lowercasedText)"),
            "version": .string(version),
        ])
        return Resource(json: .object(object), version: version)
    }

    struct GroupWrite {
        var displayName: String
        var externalID: String?
        var members: [UUID]

        init(_ body: [String: JSONValue]) throws(SCIMError) {
            let core = try SCIMSchemas.clean(body, SCIMSchemas.groupAttributes, at: "")
            guard case .string(let name)? = core["displayName"], !name.trimmingCharacters(in: .whitespaces).isEmpty else {
                throw .invalidValue("displayName is required: the group's name")
            }
            displayName = name
            switch SCIMFilter.member("externalId", of: .object(body)) {
            case .string(let text)?:
                guard (1...SCIMSchemas.maxString).contains(text.unicodeScalars.count) else {
                    throw .invalidValue("externalId must be 1 to \(SCIMSchemas.maxString) characters")
                }
                externalID = text
            case nil, .null?: externalID = nil
            default: throw .invalidValue("externalId must be a string")
            }
            var members: [UUID] = []
            var seen = Set<UUID>()
            if case .array(let items)? = core["members"] {
                for (index, item) in items.enumerated() {
                    if case .string(let type)? = item["type"], type.caseInsensitiveCompare("User") != .orderedSame {
                        throw .invalidValue("members[\(index)]: groups hold users only, not \(type)")
                    }
                    guard case .string(let value)? = item["value"], let id = UUID(uuidString: value) else {
                        throw .invalidValue("members[\(index)].value must be the id of a user of this campus")
                    }
                    if seen.insert(id).inserted { members.append(id) }
                }
            }
            self.members = members
        }
    }

    // MARK: Roles that follow groups

    /// Gives each of `users` the roles their groups map to (SCIM groups, and the groups the
    /// `groups` claim named at their last sign-in) and takes away those only groups gave and
    /// no group gives now; a role granted by hand stays. Each change is audited with its source.
    static func recomputeRoles(_ connection: PostgresConnection, campus: CampusID, users: [UUID], source: String, actor: String)
        async throws
    {
        guard !users.isEmpty else { return }
        let rows = try await connection.query(
            """
            WITH target AS (
                SELECT u.id, u.email, u.roles, u.directory_roles, u.claimed_groups FROM users u
                WHERE u.campus_id = \(campus) AND u.id = ANY(\(users)) ORDER BY u.id FOR UPDATE
            ), computed AS (
                SELECT t.id, t.email, ARRAY(SELECT r FROM unnest(t.roles) r ORDER BY r) AS old_roles,
                    ARRAY(SELECT r FROM unnest(t.roles) r WHERE NOT r = ANY(t.directory_roles)) AS manual,
                    ARRAY(
                        SELECT DISTINCT m.role FROM role_mappings m
                        WHERE m.campus_id = \(campus) AND (
                            lower(m.group_key) IN (SELECT lower(x) FROM unnest(t.claimed_groups) x)
                            OR EXISTS (
                                SELECT 1 FROM directory_group_members gm
                                JOIN directory_groups g ON g.campus_id = gm.campus_id AND g.id = gm.group_id
                                WHERE gm.campus_id = \(campus) AND gm.user_id = t.id
                                  AND (lower(g.display_name) = lower(m.group_key) OR g.external_id = m.group_key)))
                    ) AS wanted
                FROM target t
            ), next AS (
                SELECT c.id, c.email, c.old_roles,
                    ARRAY(SELECT DISTINCT r FROM unnest(c.manual || c.wanted) r ORDER BY r) AS roles,
                    ARRAY(SELECT r FROM unnest(c.wanted) r WHERE NOT r = ANY(c.manual) ORDER BY r) AS directory_roles
                FROM computed c
            ), updated AS (
                UPDATE users u SET roles = n.roles, directory_roles = n.directory_roles
                FROM next n
                WHERE u.campus_id = \(campus) AND u.id = n.id
                  AND (n.roles IS DISTINCT FROM n.old_roles OR n.directory_roles IS DISTINCT FROM u.directory_roles)
                RETURNING n.email, n.old_roles, n.roles
            )
            SELECT email, old_roles, roles FROM updated
            """)
        var actions: [String] = [], targets: [String] = [], roles: [String] = []
        for row in rows {
            let email: String = try row.decode("email")
            let old = Set(try row.decode("old_roles", as: [String].self)), new = Set(try row.decode("roles", as: [String].self))
            for role in new.subtracting(old).sorted() {
                (actions, targets, roles) = (actions + ["role.grant"], targets + [email], roles + [role])
            }
            for role in old.subtracting(new).sorted() {
                (actions, targets, roles) = (actions + ["role.revoke"], targets + [email], roles + [role])
            }
        }
        guard !rows.isEmpty else { return }
        if !actions.isEmpty {
            try await connection.query(
                """
                INSERT INTO audit_log (campus_id, actor, action, target, details)
                SELECT \(campus), \(actor), a.action, a.target, jsonb_build_object('role', a.role, 'source', \(source)::text)
                FROM unnest(\(actions)::text[], \(targets)::text[], \(roles)::text[]) AS a(action, target, role)
                """)
        }
        try await AuthGenerations.bump(connection, campus: campus)
    }

    /// Which role each directory group gives at `campus`.
    public func roleMappings(campus: Campus) async throws -> [(group: String, role: Role)] {
        try await client.query(
            "SELECT group_key, role FROM role_mappings WHERE campus_id = \(campus.id) ORDER BY group_key, role", campus: campus.id.rawValue
        ).compactMap { row in
            guard let role = Role(rawValue: try row.decode("role")) else { return nil }
            return (try row.decode("group_key"), role)
        }
    }

    /// Maps (or, `map: false`, unmaps) the group `key` (a displayName or an externalId, or a
    /// name the `groups` claim gives) to `role`, audited, and moves the roles of everyone the
    /// change concerns. Returns whether anything changed.
    @discardableResult
    public func setRoleMapping(campus: Campus, group key: String, role: Role, map: Bool, actor: String) async throws -> Bool {
        guard role != .member else { throw IdentityError.memberRoleIsPermanent }
        guard (1...SCIMSchemas.maxString).contains(key.unicodeScalars.count) else {
            throw IdentityError.invalidGroupName(key)
        }
        return try await client.withTransaction(campus: campus.id.rawValue) { connection in
            let changed =
                map
                ? try await connection.query(
                    """
                    INSERT INTO role_mappings (campus_id, group_key, role) VALUES (\(campus.id), \(key), \(role.rawValue))
                    ON CONFLICT DO NOTHING RETURNING 1
                    """)
                : try await connection.query(
                    "DELETE FROM role_mappings WHERE campus_id = \(campus.id) AND group_key = \(key) AND role = \(role.rawValue) RETURNING 1"
                )
            guard !changed.isEmpty else { return false }
            try await AuditLog.record(
                connection, campus: campus.id, actor: actor, action: map ? "roles.map" : "roles.unmap", target: key,
                details: ["role": role.rawValue])
            let concerned = try await connection.query(
                """
                SELECT u.id FROM users u WHERE u.campus_id = \(campus.id)
                  AND (cardinality(u.directory_roles) > 0 OR lower(\(key)) IN (SELECT lower(x) FROM unnest(u.claimed_groups) x)
                       OR EXISTS (SELECT 1 FROM directory_group_members gm JOIN directory_groups g ON g.campus_id = gm.campus_id AND g.id = gm.group_id
                                  WHERE gm.campus_id = u.campus_id AND gm.user_id = u.id
                                    AND (lower(g.display_name) = lower(\(key)) OR g.external_id = \(key))))
                """
            ).map { try $0.decode("id", as: UUID.self) }
            try await Self.recomputeRoles(connection, campus: campus.id, users: concerned, source: "mapping", actor: actor)
            return true
        }
    }

    /// At sign-in: keeps the groups the ID token's claim named, and moves the user's roles.
    static func claimGroups(_ connection: PostgresConnection, campus: CampusID, user: UserID, groups: [String], actor: String) async throws
    {
        let changed = try await connection.query(
            """
            UPDATE users SET claimed_groups = \(groups)
            WHERE campus_id = \(campus) AND id = \(user) AND claimed_groups IS DISTINCT FROM \(groups)::text[]
            RETURNING 1
            """)
        guard !changed.isEmpty else { return }
        try await recomputeRoles(connection, campus: campus, users: [user.rawValue], source: "oidc", actor: actor)
    }
}
