import AttestPlugins
import AttestPostgres
import Foundation
import Tenancy

/// A member's private journal (`journal_entries`, `journal_audio`). Every statement runs in a
/// transaction that names the campus and the member, so row-level security admits that
/// member's rows only, behind the `WHERE` clauses that say the same. Title, text and audio are
/// sealed under the key-encryption key, each with a data key of its own bound to the entry
/// (`SealedSecret`): a sealed value copied to another row, member or campus does not open.
public struct JournalStore: Sendable {
    let client: PostgresClient
    let kek: KeyEncryptionKey?

    public init(client: PostgresClient, kek: KeyEncryptionKey?) {
        self.client = client
        self.kek = kek
    }

    /// A page of entries, newest first, and where the next begins.
    public struct Page: Sendable {
        public var entries: [JournalEntry]
        public var next: Cursor?
    }

    /// After the entry of `date` and `id`, in the newest-first order.
    public struct Cursor: Sendable, Equatable {
        public var date: LocalDate
        public var id: UUID

        public init(date: LocalDate, id: UUID) {
            self.date = date
            self.id = id
        }

        /// `2026-11-20.<uuid>`.
        public var text: String { "\(date).\(id.lowercasedText)" }

        public init?(text: String) {
            let parts = text.split(separator: ".", maxSplits: 1)
            guard parts.count == 2, let date = LocalDate(String(parts[0])), let id = UUID(uuidString: String(parts[1])) else { return nil }
            self.init(date: date, id: id)
        }
    }

    func requireKEK() throws -> KeyEncryptionKey {
        guard let kek else { throw JournalError.sealingUnavailable }
        return kek
    }

    static func context(_ campus: CampusID, _ user: UserID, _ id: UUID, _ part: String) -> String {
        "journal/\(part)/\(campus)/\(user)/\(id.lowercasedText)"
    }

    /// The columns this store seals, for `attest keys rotate-kek` (`SealedColumn`).
    public static let sealedColumns: [SealedColumn] = [
        SealedColumn(table: "journal_entries", column: "sealed", key: [.uuid("id")], scope: .member) { campus, member, row in
            context(campus, try SealedColumn.require(member), try row.decode("id"), "text")
        },
        // A recording's data key (its chunks are sealed under it: `Recordings.swift`), and a
        // recording kept whole before recordings were chunked.
        SealedColumn(table: "journal_audio", column: "data_key", key: [.uuid("entry_id")], scope: .member) { campus, member, row in
            context(campus, try SealedColumn.require(member), try row.decode("entry_id"), "audio")
        },
        SealedColumn(table: "journal_audio", column: "sealed", key: [.uuid("entry_id")], scope: .member) { campus, member, row in
            context(campus, try SealedColumn.require(member), try row.decode("entry_id"), "audio")
        },
    ]

    struct Words: Codable {
        var title: String
        var text: String
    }

    private func seal(_ words: Words, campus: CampusID, user: UserID, id: UUID) throws -> Data {
        try SealedSecret.seal(try JSONEncoder().encode(words), under: try requireKEK(), context: Self.context(campus, user, id, "text"))
    }

    private func open(_ sealed: Data, campus: CampusID, user: UserID, id: UUID) throws -> Words {
        let bytes = try SealedSecret.open(sealed, with: try requireKEK(), context: Self.context(campus, user, id, "text"))
        return try JSONDecoder().decode(Words.self, from: bytes)
    }

    static let columns: SQL = """
        e.id, e.entry_date, e.tags, e.sealed, e.created_at, e.updated_at, a.content_type, a.size
        """
    static let from: SQL = """
        journal_entries e LEFT JOIN journal_audio a ON a.campus_id = e.campus_id AND a.user_id = e.user_id AND a.entry_id = e.id
        """

    private func entry(_ row: PostgresRow, campus: CampusID, user: UserID) throws -> JournalEntry {
        let id = try row.decode("id", as: UUID.self)
        let words = try open(try row.decode("sealed", as: Data.self), campus: campus, user: user, id: id)
        let audio: (AudioType, Int)? = try row.decode("content_type", as: String?.self).flatMap { type in
            guard let kind = AudioType(rawValue: type) else { return nil }
            return (kind, Int(try row.decode("size", as: Int32.self)))
        }
        return JournalEntry(
            id: id, date: try row.decode("entry_date"), title: words.title, text: words.text,
            tags: try row.decode("tags", as: [String].self).compactMap(JournalTag.init(rawValue:)), audio: audio,
            createdAt: try row.decode("created_at"), updatedAt: try row.decode("updated_at"))
    }

    func transaction<Result: Sendable>(
        campus: CampusID, user: UserID, _ body: (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await client.withTransaction(settings: CampusScope.settings(campus.rawValue, member: user.rawValue), body)
    }

    /// A recording to keep with an entry; its type was read from its bytes by the caller.
    public typealias Recording = (type: AudioType, bytes: Data)

    /// Stores a new entry, and its recording when there is one, in one transaction; refuses
    /// (`MemberQuotas.Exceeded`) what would go past the member's quotas.
    public func create(
        campus: CampusID, user: UserID, _ draft: JournalDraft, audio: Recording? = nil, at now: Date, quotas: MemberQuotas = MemberQuotas()
    ) async throws -> JournalEntry {
        let id = UUID.timeOrdered(at: now)
        let sealed = try seal(Words(title: draft.title, text: draft.text), campus: campus, user: user, id: id)
        let sealedAudio = try audio.map { try incomingRecording($0.bytes, campus: campus, user: user, id: id) }
        return try await transaction(campus: campus, user: user) { connection in
            let written: Int =
                try await connection.query(
                    """
                    SELECT count(*) AS n FROM journal_entries
                    WHERE campus_id = \(campus) AND user_id = \(user.rawValue) AND id >= \(UUID.timeOrderedFloor(at: now.addingTimeInterval(-86_400)))
                    """
                ).first?.decode("n") ?? 0
            guard written < quotas.entriesPerDay else { throw MemberQuotas.Exceeded.entriesPerDay(quotas.entriesPerDay) }
            try await connection.query(
                """
                INSERT INTO journal_entries (campus_id, user_id, id, entry_date, tags, sealed, created_at, updated_at)
                VALUES (\(campus), \(user.rawValue), \(id), \(draft.date), \(draft.tags.map(\.rawValue)), \(sealed), \(now), \(now))
                """)
            if let audio, let sealedAudio {
                _ = try await storeRecording(
                    connection, campus: campus, user: user, id: id, type: audio.type, recording: sealedAudio, quotas: quotas)
            }
            return JournalEntry(
                id: id, date: draft.date, title: draft.title, text: draft.text, tags: draft.tags,
                audio: audio.map { ($0.type, $0.bytes.count) }, createdAt: now, updatedAt: now)
        }
    }

    /// Newest first (by date, then newest written), `limit` a page, after `cursor`.
    public func list(campus: CampusID, user: UserID, after cursor: Cursor?, limit: Int) async throws -> Page {
        let after: SQL = cursor.map { "AND (e.entry_date, e.id) < (\($0.date), \($0.id))" } ?? ""
        let rows = try await transaction(campus: campus, user: user) { connection in
            try await connection.query(
                """
                SELECT \(Self.columns) FROM \(Self.from)
                WHERE e.campus_id = \(campus) AND e.user_id = \(user.rawValue) \(after)
                ORDER BY e.entry_date DESC, e.id DESC LIMIT \(limit + 1)
                """)
        }
        var entries = try rows.map { try entry($0, campus: campus, user: user) }
        var next: Cursor?
        if entries.count > limit {
            entries.removeLast()
            next = entries.last.map { Cursor(date: $0.date, id: $0.id) }
        }
        return Page(entries: entries, next: next)
    }

    /// Entries dated from `from` through `to`, oldest first, `limit` after `cursor` (an
    /// entry's date and id, in this order): an export, a batch at a time.
    public func range(
        campus: CampusID, user: UserID, from: LocalDate, to: LocalDate, after cursor: Cursor? = nil, limit: Int = 10_000
    ) async throws -> [JournalEntry] {
        let after: SQL = cursor.map { "AND (e.entry_date, e.id) > (\($0.date), \($0.id))" } ?? ""
        let rows = try await transaction(campus: campus, user: user) { connection in
            try await connection.query(
                """
                SELECT \(Self.columns) FROM \(Self.from)
                WHERE e.campus_id = \(campus) AND e.user_id = \(user.rawValue) AND e.entry_date BETWEEN \(from) AND \(to) \(after)
                ORDER BY e.entry_date, e.id LIMIT \(limit)
                """)
        }
        return try rows.map { try entry($0, campus: campus, user: user) }
    }

    /// How many entries are dated from `from` through `to`.
    public func count(campus: CampusID, user: UserID, from: LocalDate, to: LocalDate) async throws -> Int {
        try await transaction(campus: campus, user: user) { connection in
            try await connection.query(
                """
                SELECT count(*) AS n FROM journal_entries
                WHERE campus_id = \(campus) AND user_id = \(user.rawValue) AND entry_date BETWEEN \(from) AND \(to)
                """)
        }.first?.decode("n") ?? 0
    }

    public func find(campus: CampusID, user: UserID, id: UUID) async throws -> JournalEntry? {
        let rows = try await transaction(campus: campus, user: user) { connection in
            try await connection.query(
                "SELECT \(Self.columns) FROM \(Self.from) WHERE e.campus_id = \(campus) AND e.user_id = \(user.rawValue) AND e.id = \(id)")
        }
        return try rows.first.map { try entry($0, campus: campus, user: user) }
    }

    /// Replaces the entry's fields with `draft` (the caller merged a PATCH into it), and its
    /// recording with `audio` when one is given, in one transaction.
    public func update(
        campus: CampusID, user: UserID, id: UUID, _ draft: JournalDraft, audio: Recording? = nil, at now: Date,
        quotas: MemberQuotas = MemberQuotas()
    ) async throws -> JournalEntry {
        let sealed = try seal(Words(title: draft.title, text: draft.text), campus: campus, user: user, id: id)
        let sealedAudio = try audio.map { try incomingRecording($0.bytes, campus: campus, user: user, id: id) }
        let updated = try await transaction(campus: campus, user: user) { connection in
            let count = try await connection.query(
                """
                UPDATE journal_entries SET entry_date = \(draft.date), tags = \(draft.tags.map(\.rawValue)), sealed = \(sealed),
                       updated_at = greatest(\(now), created_at)
                WHERE campus_id = \(campus) AND user_id = \(user.rawValue) AND id = \(id)
                """
            ).affectedRows
            if count == 1, let audio, let sealedAudio {
                _ = try await storeRecording(
                    connection, campus: campus, user: user, id: id, type: audio.type, recording: sealedAudio, quotas: quotas)
            }
            return count
        }
        guard updated == 1, let entry = try await find(campus: campus, user: user, id: id) else { throw JournalError.notFound }
        return entry
    }

    /// Deletes the entry and its recording; false when there was none.
    public func delete(campus: CampusID, user: UserID, id: UUID) async throws -> Bool {
        try await transaction(campus: campus, user: user) { connection in
            try await connection.query(
                "DELETE FROM journal_entries WHERE campus_id = \(campus) AND user_id = \(user.rawValue) AND id = \(id)"
            ).affectedRows == 1
        }
    }

    /// Stores (or replaces) the entry's recording. The caller checked its type from its bytes.
    public func putAudio(
        campus: CampusID, user: UserID, id: UUID, type: AudioType, bytes: Data, quotas: MemberQuotas = MemberQuotas()
    ) async throws {
        let recording = try incomingRecording(bytes, campus: campus, user: user, id: id)
        let stored = try await transaction(campus: campus, user: user) { connection in
            try await storeRecording(connection, campus: campus, user: user, id: id, type: type, recording: recording, quotas: quotas)
        }
        guard stored == 1 else { throw JournalError.notFound }
    }

    /// Removes the entry's recording; false when it had none.
    public func deleteAudio(campus: CampusID, user: UserID, id: UUID) async throws -> Bool {
        try await transaction(campus: campus, user: user) { connection in
            try await connection.query(
                "DELETE FROM journal_audio WHERE campus_id = \(campus) AND user_id = \(user.rawValue) AND entry_id = \(id)"
            ).affectedRows == 1
        }
    }
}
