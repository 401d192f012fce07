import AttestPlugins
import Foundation
import Tenancy

/// A member's export of a range, streamed: `prepare` reads the counts and the first batch, so
/// that a value this server's key cannot open fails before a byte is sent; `write` then hands
/// the document over in batches of `batchSize` entries or episodes. Memory does not grow with
/// the range.
public struct MemberExports: Sendable {
    /// Entries or episodes read, opened and written at a time: about a megabyte of the largest
    /// entries, the most one export holds at once.
    public static let batchSize = 25

    let journal: JournalStore
    let episodes: EpisodeStore

    public init(journal: JournalStore, episodes: EpisodeStore) {
        self.journal = journal
        self.episodes = episodes
    }

    public struct Prepared: Sendable {
        let exports: MemberExports
        let campus: CampusID
        let user: UserID
        let format: MemberExport.Format
        public let heading: MemberExport.Heading
        let started: (from: Date, to: Date)
        let firstEntries: [JournalEntry]

        /// Writes the whole document to `sink`, a chunk at a time.
        public func write(_ sink: (_ chunk: [UInt8]) async throws -> Void) async throws {
            let batch = MemberExports.batchSize
            var writer = MemberExport.Writer(format: format, heading: heading)
            try await sink(writer.begin())
            var entries = firstEntries
            while !entries.isEmpty {
                try await sink(writer.write(entries))
                await Task.yield()  // a long export shares the cooperative threads with every request
                guard entries.count == batch, let last = entries.last else { break }
                entries = try await exports.journal.range(
                    campus: campus, user: user, from: heading.from, to: heading.to,
                    after: JournalStore.Cursor(date: last.date, id: last.id),
                    limit: batch)
            }
            try await sink(writer.beginEpisodes())
            var cursor: EpisodeStore.Cursor?
            while true {
                let episodes = try await exports.episodes.range(
                    campus: campus, user: user, from: started.from, to: started.to, after: cursor, limit: batch, now: heading.generatedAt)
                if !episodes.isEmpty { try await sink(writer.write(episodes)) }
                await Task.yield()
                guard episodes.count == batch, let last = episodes.last else { break }
                cursor = EpisodeStore.Cursor(startedAt: last.startedAt, id: last.id)
            }
            try await sink(writer.finish())
        }
    }

    /// The export of `user`'s entries dated `from` through `to` and episodes started on those
    /// campus-local days, headed with `member` (how the campus names them); a PDF's words in
    /// `language`.
    public func prepare(
        campus: Campus, user: UserID, member: String, from: LocalDate, to: LocalDate, format: MemberExport.Format, now: Date,
        profile: HealthProfile? = nil, language: String = "en"
    ) async throws -> Prepared {
        let started = (from: campus.startOfDay(from), to: campus.startOfDay(to.adding(days: 1)))
        let entryCount = try await journal.count(campus: campus.id, user: user, from: from, to: to)
        let summary = try await episodes.summary(campus: campus.id, user: user, from: started.from, to: started.to, now: now)
        let first = try await journal.range(campus: campus.id, user: user, from: from, to: to, limit: Self.batchSize)
        let heading = MemberExport.Heading(
            campusName: campus.name, member: member, from: from, to: to, zone: campus.zone, generatedAt: now, entryCount: entryCount,
            episodes: summary, profile: profile, language: language)
        return Prepared(
            exports: self, campus: campus.id, user: user, format: format, heading: heading, started: started, firstEntries: first)
    }

    /// The member's own export (the API's `me/export`, the pages' download), recorded in the
    /// audit log as `actor`'s: that it happened and its format, nothing of what it held.
    public func prepareOwn(
        campus: Campus, user: UserID, member: String, actor: String, from: LocalDate, to: LocalDate, format: MemberExport.Format,
        now: Date, profile: HealthProfile? = nil, language: String = "en"
    ) async throws -> Prepared {
        let prepared = try await prepare(
            campus: campus, user: user, member: member, from: from, to: to, format: format, now: now, profile: profile,
            language: language)
        try await journal.client.withTransaction(campus: campus.id.rawValue) { connection in
            try await AuditLog.record(
                connection, campus: campus.id, actor: actor, action: "member.export", target: "", details: ["format": format.rawValue])
        }
        return prepared
    }
}
