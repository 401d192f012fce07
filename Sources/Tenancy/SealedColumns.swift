import AttestPlugins
import AttestPostgres
import Foundation

/// A column of the schema that holds `SealedSecret` envelopes, and how to name what each one
/// is bound to: what `attest keys rotate-kek` re-wraps. The module that seals a value
/// declares its columns (`BadgeKeyStore.sealedColumns`, `JournalStore.sealedColumns`, …);
/// `SealedColumns.all` in the CLI lists every module's, and a test fails for a `bytea` column
/// of the schema that is neither listed there nor known to hold something else (a hash).
public struct SealedColumn: Sendable {
    /// Whose transaction sees the rows: a campus's, or (for a member's own tables, behind the
    /// `member_only` policy) one member's.
    public enum Scope: Sendable { case campus, member }

    /// A column of the row's key and its SQL type.
    public struct KeyColumn: Sendable {
        public let name: String
        public let type: String

        public static func uuid(_ name: String) -> KeyColumn { KeyColumn(name: name, type: "uuid") }
        public static func text(_ name: String) -> KeyColumn { KeyColumn(name: name, type: "text") }
    }

    public let table: String
    public let column: String
    /// The columns after `campus_id` (and `user_id` for a member's table) that name one row.
    public let key: [KeyColumn]
    public let scope: Scope
    /// A column kept naming the key-encryption key beside the envelope, or nil.
    public let kekIDColumn: String?
    /// SQL that admits only rows holding envelopes, or nil for all (badge keys stored before
    /// keys were sealed are raw until a server seals them).
    public let condition: String?
    /// What the envelope of `row` is bound to (`SealedSecret`'s context).
    public let context: @Sendable (_ campus: CampusID, _ member: UserID?, _ row: PostgresRow) throws -> String

    public init(
        table: String, column: String, key: [KeyColumn], scope: Scope, kekIDColumn: String? = nil, condition: String? = nil,
        context: @escaping @Sendable (_ campus: CampusID, _ member: UserID?, _ row: PostgresRow) throws -> String
    ) {
        (self.table, self.column, self.key, self.scope, self.kekIDColumn, self.condition, self.context) =
            (table, column, key, scope, kekIDColumn, condition, context)
    }

    /// `table.column`.
    public var name: String { "\(table).\(column)" }

    /// The member a member's table's context names (always given for `.member` columns).
    public static func require(_ member: UserID?) throws -> UserID {
        guard let member else { throw CampusError.sealedSecretDamaged }
        return member
    }
}

/// Re-wraps every envelope of the given columns from the keys of `from` (a ring: the current
/// key and any previous ones) to `to`, campus by campus and, for a member's tables, member by
/// member, a batch of rows a transaction. Only the data keys change. A row already under `to`
/// is skipped, so a run that stops (killed, the database gone) is finished by running it again;
/// rows are locked while re-wrapped, so a server writing the same row waits for the batch.
public struct KeyRotation: Sendable {
    /// How far a run has come, for the terminal.
    public struct Progress: Sendable {
        public var campus: String
        public var campusIndex: Int
        public var campusCount: Int
        /// Members of this campus whose tables were gone through, of how many.
        public var membersDone: Int
        public var memberCount: Int
        /// Values re-wrapped so far, every campus.
        public var rewrapped: Int
    }

    let client: PostgresClient
    let columns: [SealedColumn]
    let from: KeyEncryptionKey
    let to: KeyEncryptionKey
    let batchSize: Int

    public init(client: PostgresClient, columns: [SealedColumn], from: KeyEncryptionKey, to: KeyEncryptionKey, batchSize: Int = 200) {
        (self.client, self.columns, self.from, self.to, self.batchSize) = (client, columns, from.accepting([]), to, max(1, batchSize))
    }

    /// Re-wraps every campus's values; how many of each campus changed. Audited per campus
    /// (`kek.rotate`, with the count of each column).
    public func run(
        campuses: [Campus], actor: String, progress: @Sendable (Progress) -> Void = { _ in }
    ) async throws -> [String: Int] {
        var counts: [String: Int] = [:]
        var total = 0
        for (index, campus) in campuses.enumerated() {
            var state = Progress(
                campus: campus.slug, campusIndex: index, campusCount: campuses.count, membersDone: 0, memberCount: 0, rewrapped: total)
            let changed = try await rotate(campus: campus.id, actor: actor) { members, count, values in
                state.membersDone = members
                state.memberCount = count
                state.rewrapped = total + values
                progress(state)
            }
            counts[campus.slug] = changed
            total += changed
        }
        return counts
    }

    /// One campus: its own columns, then each member's.
    public func rotate(
        campus: CampusID, actor: String, progress: (_ membersDone: Int, _ members: Int, _ values: Int) -> Void = { _, _, _ in }
    ) async throws -> Int {
        var byColumn: [String: Int] = [:]
        for column in columns where column.scope == .campus {
            byColumn[column.name, default: 0] += try await rewrapAll(column, campus: campus, member: nil)
        }
        let memberColumns = columns.filter { $0.scope == .member }
        if !memberColumns.isEmpty {
            let memberCount: Int =
                try await client.query("SELECT count(*) AS n FROM users WHERE campus_id = \(campus)", campus: campus.rawValue)
                .first?.decode("n") ?? 0
            var after = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
            var done = 0
            while true {
                let members = try await client.query(
                    "SELECT id FROM users WHERE campus_id = \(campus) AND id > \(after) ORDER BY id LIMIT 1000", campus: campus.rawValue
                ).map { try $0.decode("id", as: UUID.self) }
                guard let last = members.last else { break }
                for member in members {
                    for column in memberColumns {
                        byColumn[column.name, default: 0] += try await rewrapAll(column, campus: campus, member: UserID(member))
                    }
                    done += 1
                    if done % 100 == 0 { progress(done, memberCount, byColumn.values.reduce(0, +)) }
                }
                after = last
            }
            progress(done, max(done, memberCount), byColumn.values.reduce(0, +))
        }
        let changed = byColumn.values.reduce(0, +)
        if changed > 0 {
            try await client.withTransaction(campus: campus.rawValue) { connection in
                var details = byColumn.filter { $0.value > 0 }.mapValues { "\($0)" }
                details["from"] = from.ids.joined(separator: ",")
                try await AuditLog.record(connection, campus: campus, actor: actor, action: "kek.rotate", target: to.id, details: details)
            }
        }
        return changed
    }

    /// Every envelope of `column` at `campus` (of `member`) not under `to`, a batch a transaction.
    func rewrapAll(_ column: SealedColumn, campus: CampusID, member: UserID?) async throws -> Int {
        var changed = 0
        while true {
            let count = try await rewrapBatch(column, campus: campus, member: member)
            changed += count
            if count < batchSize { return changed }
        }
    }

    private func rewrapBatch(_ column: SealedColumn, campus: CampusID, member: UserID?) async throws -> Int {
        let settings = member.map { CampusScope.settings(campus.rawValue, member: $0.rawValue) } ?? CampusScope.settings(campus.rawValue)
        let target = Data(hex: to.id) ?? Data()
        var scope: SQL = "campus_id = \(campus)"
        if let member { scope = scope + " AND user_id = \(member.rawValue)" }
        // Each key column as itself (for the context) and as text (to name the row again).
        let keyList = column.key.map { "\"\($0.name)\"" }.joined(separator: ", ")
        let keyTexts = column.key.enumerated().map { "\"\($1.name)\"::text AS key\($0)" }.joined(separator: ", ")
        let value = "\"\(column.column)\""
        return try await client.withTransaction(settings: settings) { connection in
            let rows = try await connection.query(
                """
                SELECT \(unsafeRaw: keyList.isEmpty ? "" : keyList + ", " + keyTexts + ", ")\(unsafeRaw: value) AS sealed FROM \(identifier: column.table)
                WHERE \(scope) AND \(unsafeRaw: value) IS NOT NULL AND length(\(unsafeRaw: value)) > \(SealedSecret.headerSize)
                  AND substring(\(unsafeRaw: value) from 2 for 8) <> \(target) \(unsafeRaw: column.condition.map { "AND (\($0))" } ?? "")
                ORDER BY \(unsafeRaw: keyList.isEmpty ? "1" : keyList) LIMIT \(batchSize) FOR UPDATE
                """)
            for row in rows {
                let rewrapped = try SealedSecret.rewrap(
                    try row.decode("sealed", as: Data.self), from: from, to: to, context: try column.context(campus, member, row))
                var update: SQL = "UPDATE \(identifier: column.table) SET \(unsafeRaw: value) = \(rewrapped)"
                if let kekIDColumn = column.kekIDColumn { update = update + ", \(identifier: kekIDColumn) = \(to.id)" }
                update = update + " WHERE \(scope)"
                for (position, key) in column.key.enumerated() {
                    update =
                        update
                        + " AND \(identifier: key.name) = CAST(\(try row.decode("key\(position)", as: String.self)) AS \(unsafeRaw: key.type))"
                }
                try await connection.query(update)
            }
            return rows.count
        }
    }
}
