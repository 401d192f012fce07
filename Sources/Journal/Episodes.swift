import AttestPlugins
import AttestPostgres
import Foundation
import Logging
import Tenancy

/// One episode a member tracked: a start, a stop (nil while open), and the weather where it began.
public struct Episode: Sendable, Equatable {
    public var id: UUID
    public var kind: String
    public var severity: Int
    public var notes: String
    public var startedAt: Date
    public var stoppedAt: Date?
    /// Closed by the platform 72 h after its start, the member never having stopped it.
    public var autoClosed: Bool
    public var location: CoarseLocation?
    /// The weather at the start, and at the same place and hour a day earlier.
    public var context: EnvironmentFactors?
    public var baseline: EnvironmentFactors?
    public var createdAt: Date
    public var updatedAt: Date

    /// Whole seconds from start to stop; nil while open.
    public var durationSeconds: Int? {
        stoppedAt.map { Int(exactly: max(0, $0.timeIntervalSince(startedAt)).rounded(.down)) ?? 0 }
    }
}

/// What a member gives when starting an episode, or the whole of one after an edit.
public struct EpisodeDraft: Sendable, Equatable {
    public var kind: String
    public var severity: Int
    public var notes: String
    public var startedAt: Date
    public var stoppedAt: Date?
    public var location: CoarseLocation?

    public init(kind: String, severity: Int, notes: String = "", startedAt: Date, stoppedAt: Date? = nil, location: CoarseLocation? = nil) {
        self.kind = kind
        self.severity = severity
        self.notes = notes
        self.startedAt = startedAt
        self.stoppedAt = stoppedAt
        self.location = location
    }

    public static let maxNotes = 2_000
    public static let maxNotesBytes = 8_000
    /// An episode left open this long is closed by the platform, flagged.
    public static let longest: TimeInterval = 72 * 3600

    /// What is wrong with it, field by field, for a campus whose kinds are `kinds`.
    public func problems(kinds: [String], now: Date) -> [(field: String, message: String)] {
        var problems: [(String, String)] = []
        if !kinds.contains(kind) { problems.append(("kind", "must be one of \(kinds.joined(separator: ", "))")) }
        if !(0...10).contains(severity) { problems.append(("severity", "must be a whole number from 0 to 10")) }
        if let problem = TextLimit.problem(notes, characters: Self.maxNotes, bytes: Self.maxNotesBytes) {
            problems.append(("notes", problem))
        }
        if startedAt > now.addingTimeInterval(60) { problems.append(("startedAt", "must not be in the future")) }
        if startedAt < now.addingTimeInterval(-366 * 86_400) { problems.append(("startedAt", "must be within the last year")) }
        if let stoppedAt {
            if stoppedAt < startedAt { problems.append(("stoppedAt", "must not be before startedAt")) }
            if stoppedAt > now.addingTimeInterval(60) { problems.append(("stoppedAt", "must not be in the future")) }
        }
        return problems
    }

    /// The kinds every campus offers; a campus adds its own with `episodeKinds` in its settings.
    public static let standardKinds = ["headache", "migraine"]

    /// The kinds a campus offers: the standard ones and its settings' `episodeKinds` (each
    /// `[a-z][a-z0-9-]{0,39}`; others are ignored).
    public static func kinds(settings: JSONValue?) -> [String] {
        guard case .array(let items)? = settings?["episodeKinds"] else { return standardKinds }
        let extra = items.compactMap { item -> String? in
            guard case .string(let kind) = item, isValidKind(kind) else { return nil }
            return kind
        }
        var seen = Set<String>()
        return (standardKinds + extra).filter { seen.insert($0).inserted }
    }

    /// The keys of a campus's `settings` the episodes read.
    public static let settingKeys = ["episodeKinds"]

    /// What is wrong with `episodeKinds` among a campus's new `settings` (null: being removed):
    /// what `attest campus set … settings` refuses, where a kind would be quietly left out.
    public static func problems(in settings: [String: JSONValue]) -> [String] {
        guard let value = settings["episodeKinds"], value != .null else { return [] }
        if case .array(let items) = value, items.allSatisfy({ if case .string(let kind) = $0 { isValidKind(kind) } else { false } }) {
            return []
        }
        return ["episodeKinds: an array of kinds, each a lowercase letter then up to 39 of a-z, 0-9 and -, such as [\"cluster-headache\"]"]
    }

    public static func isValidKind(_ kind: String) -> Bool {
        guard let first = kind.utf8.first, (0x61...0x7A).contains(first), kind.utf8.count <= 40 else { return false }
        return kind.utf8.allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2D }
    }
}

/// Why an episode request cannot be done; each says how to mend it.
public enum EpisodeError: Error, Equatable, CustomStringConvertible {
    case notFound
    case alreadyOpen(kind: String, id: UUID)
    case alreadyStopped

    public var description: String {
        switch self {
        case .notFound: "no such episode of yours: GET …/me/episodes lists them"
        case .alreadyOpen(let kind, let id):
            "a \(kind) episode is already open (\(id.lowercasedText)): stop it first with POST …/me/episodes/\(id.lowercasedText)/stop"
        case .alreadyStopped: "the episode is already stopped: change its times with PATCH …/me/episodes/{id}"
        }
    }
}

/// A member's episodes (`episodes`), in transactions that name the campus and the member
/// (row-level security admits their rows only). Notes are sealed like the journal's words.
/// Every call first closes the member's episodes left open for 72 h, flagged.
public struct EpisodeStore: Sendable {
    let client: PostgresClient
    let kek: KeyEncryptionKey?

    public init(client: PostgresClient, kek: KeyEncryptionKey?) {
        self.client = client
        self.kek = kek
    }

    /// After the episode started at `startedAt` with `id`, newest first.
    public struct Cursor: Sendable, Equatable {
        public var startedAt: Date
        public var id: UUID

        public init(startedAt: Date, id: UUID) {
            self.startedAt = startedAt
            self.id = id
        }

        /// `<microseconds since 1970>.<uuid>`.
        public var text: String {
            "\(Int64(exactly: (startedAt.timeIntervalSince1970 * 1_000_000).rounded()) ?? 0).\(id.lowercasedText)"
        }

        public init?(text: String) {
            let parts = text.split(separator: ".", maxSplits: 1)
            guard parts.count == 2, parts[0].utf8.count <= 18, let micros = Int64(parts[0]), let id = UUID(uuidString: String(parts[1]))
            else {
                return nil
            }
            self.init(startedAt: Date(timeIntervalSince1970: Double(micros) / 1_000_000), id: id)
        }
    }

    private func requireKEK() throws -> KeyEncryptionKey {
        guard let kek else { throw JournalError.sealingUnavailable }
        return kek
    }

    static func context(_ campus: CampusID, _ user: UserID, _ id: UUID) -> String {
        "episode/notes/\(campus)/\(user)/\(id.lowercasedText)"
    }

    /// The column this store seals, for `attest keys rotate-kek` (`SealedColumn`).
    public static let sealedColumns: [SealedColumn] = [
        SealedColumn(table: "episodes", column: "sealed", key: [.uuid("id")], scope: .member) { campus, member, row in
            context(campus, try SealedColumn.require(member), try row.decode("id"))
        }
    ]

    private func seal(_ notes: String, campus: CampusID, user: UserID, id: UUID) throws -> Data {
        try SealedSecret.seal(Data(notes.utf8), under: try requireKEK(), context: Self.context(campus, user, id))
    }

    static let columns: SQL = """
        id, kind, severity, sealed, started_at, stopped_at, auto_closed, latitude, longitude, context, baseline, created_at, updated_at
        """

    private func episode(_ row: PostgresRow, campus: CampusID, user: UserID) throws -> Episode {
        let id = try row.decode("id", as: UUID.self)
        let notes = try SealedSecret.open(
            try row.decode("sealed", as: Data.self), with: try requireKEK(), context: Self.context(campus, user, id))
        func factors(_ column: String) throws -> EnvironmentFactors? {
            try row.decode(column, as: PostgresJSON?.self).flatMap {
                try? JSONDecoder().decode(EnvironmentFactors.self, from: Data($0.bytes))
            }
        }
        let latitude = try row.decode("latitude", as: Double?.self), longitude = try row.decode("longitude", as: Double?.self)
        return Episode(
            id: id, kind: try row.decode("kind"), severity: Int(try row.decode("severity", as: Int16.self)),
            notes: String(decoding: notes, as: UTF8.self), startedAt: try row.decode("started_at"), stoppedAt: try row.decode("stopped_at"),
            autoClosed: try row.decode("auto_closed"),
            location: latitude.flatMap { lat in longitude.flatMap { CoarseLocation(latitude: lat, longitude: $0) } },
            context: try factors("context"), baseline: try factors("baseline"),
            createdAt: try row.decode("created_at"), updatedAt: try row.decode("updated_at"))
    }

    func transaction<Result: Sendable>(
        campus: CampusID, user: UserID, now: Date, _ body: (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await client.withTransaction(settings: CampusScope.settings(campus.rawValue, member: user.rawValue)) { connection in
            try await connection.query(
                """
                UPDATE episodes SET stopped_at = started_at + interval '72 hours', auto_closed = true, updated_at = \(now)
                WHERE campus_id = \(campus) AND user_id = \(user.rawValue) AND stopped_at IS NULL
                  AND started_at < \(now.addingTimeInterval(-EpisodeDraft.longest))
                """)
            return try await body(connection)
        }
    }

    static func json(_ factors: EnvironmentFactors?) -> PostgresJSON? {
        guard let factors, !factors.isEmpty, let data = try? JSONEncoder().encode(factors) else { return nil }
        return PostgresJSON(String(decoding: data, as: UTF8.self))
    }

    /// Starts an episode; `EpisodeError.alreadyOpen` when one of its kind is open,
    /// `MemberQuotas.Exceeded` past the member's episodes a day.
    public func start(
        campus: CampusID, user: UserID, _ draft: EpisodeDraft, context: EnvironmentFactors?, baseline: EnvironmentFactors?, now: Date,
        quotas: MemberQuotas = MemberQuotas()
    ) async throws -> Episode {
        let id = UUID.timeOrdered(at: now)
        let sealed = try seal(draft.notes, campus: campus, user: user, id: id)
        do {
            return try await transaction(campus: campus, user: user, now: now) { connection in
                let started: Int =
                    try await connection.query(
                        """
                        SELECT count(*) AS n FROM episodes
                        WHERE campus_id = \(campus) AND user_id = \(user.rawValue) AND id >= \(UUID.timeOrderedFloor(at: now.addingTimeInterval(-86_400)))
                        """
                    ).first?.decode("n") ?? 0
                guard started < quotas.episodesPerDay else { throw MemberQuotas.Exceeded.episodesPerDay(quotas.episodesPerDay) }
                let rows = try await connection.query(
                    """
                    INSERT INTO episodes (campus_id, user_id, id, kind, severity, sealed, started_at, stopped_at, latitude, longitude,
                                          context, baseline, created_at, updated_at)
                    VALUES (\(campus), \(user.rawValue), \(id), \(draft.kind), \(Int16(clamping: draft.severity)), \(sealed), \(draft.startedAt),
                            \(draft.stoppedAt), \(draft.location?.latitude), \(draft.location?.longitude), \(Self.json(context)),
                            \(Self.json(baseline)), \(now), \(now))
                    RETURNING \(Self.columns)
                    """)
                guard let row = rows.first else { throw EpisodeError.notFound }
                return try episode(row, campus: campus, user: user)
            }
        } catch let error as PostgresError where error.isUniqueViolation {
            let open = try await list(campus: campus, user: user, after: nil, limit: 100, now: now).episodes
                .first { $0.kind == draft.kind && $0.stoppedAt == nil }
            throw EpisodeError.alreadyOpen(kind: draft.kind, id: open?.id ?? id)
        }
    }

    public func find(campus: CampusID, user: UserID, id: UUID, now: Date) async throws -> Episode? {
        try await transaction(campus: campus, user: user, now: now) { connection in
            try await connection.query(
                "SELECT \(Self.columns) FROM episodes WHERE campus_id = \(campus) AND user_id = \(user.rawValue) AND id = \(id)")
        }.first.map { try episode($0, campus: campus, user: user) }
    }

    /// Newest first, `limit` a page, after `cursor`.
    public func list(
        campus: CampusID, user: UserID, after cursor: Cursor?, limit: Int, now: Date
    ) async throws -> (episodes: [Episode], next: Cursor?) {
        let after: SQL = cursor.map { "AND (started_at, id) < (\($0.startedAt), \($0.id))" } ?? ""
        let rows = try await transaction(campus: campus, user: user, now: now) { connection in
            try await connection.query(
                """
                SELECT \(Self.columns) FROM episodes WHERE campus_id = \(campus) AND user_id = \(user.rawValue) \(after)
                ORDER BY started_at DESC, id DESC LIMIT \(limit + 1)
                """)
        }
        var episodes = try rows.map { try episode($0, campus: campus, user: user) }
        var next: Cursor?
        if episodes.count > limit {
            episodes.removeLast()
            next = episodes.last.map { Cursor(startedAt: $0.startedAt, id: $0.id) }
        }
        return (episodes, next)
    }

    /// Episodes started from `from` until `to` (instants), oldest first, `limit` after
    /// `cursor` (in this order): an export, a batch at a time.
    public func range(
        campus: CampusID, user: UserID, from: Date, to: Date, after cursor: Cursor? = nil, limit: Int = 10_000, now: Date
    ) async throws -> [Episode] {
        let after: SQL = cursor.map { "AND (started_at, id) > (\($0.startedAt), \($0.id))" } ?? ""
        return try await transaction(campus: campus, user: user, now: now) { connection in
            try await connection.query(
                """
                SELECT \(Self.columns) FROM episodes WHERE campus_id = \(campus) AND user_id = \(user.rawValue)
                  AND started_at >= \(from) AND started_at < \(to) \(after) ORDER BY started_at, id LIMIT \(limit)
                """)
        }.map { try episode($0, campus: campus, user: user) }
    }

    /// How many episodes a range has, and the closed ones' count and total length (each
    /// counted at most 366 days, as `Episode.durationSeconds` rounds): an export's heading.
    public struct Summary: Sendable, Equatable {
        public var count: Int
        public var closedCount: Int
        public var closedSeconds: Int

        public init(count: Int, closedCount: Int, closedSeconds: Int) {
            (self.count, self.closedCount, self.closedSeconds) = (count, closedCount, closedSeconds)
        }
    }

    public func summary(campus: CampusID, user: UserID, from: Date, to: Date, now: Date) async throws -> Summary {
        let row = try await transaction(campus: campus, user: user, now: now) { connection in
            try await connection.query(
                """
                SELECT count(*) AS n, count(stopped_at) AS closed,
                       coalesce(sum(least(floor(greatest(extract(epoch FROM stopped_at - started_at), 0)), 31622400)), 0)::bigint AS seconds
                FROM episodes WHERE campus_id = \(campus) AND user_id = \(user.rawValue) AND started_at >= \(from) AND started_at < \(to)
                """)
        }.first
        return Summary(
            count: try row?.decode("n") ?? 0, closedCount: try row?.decode("closed") ?? 0, closedSeconds: try row?.decode("seconds") ?? 0)
    }

    /// Stops an open episode at `at` (not before its start).
    public func stop(campus: CampusID, user: UserID, id: UUID, at: Date, now: Date) async throws -> Episode {
        let rows = try await transaction(campus: campus, user: user, now: now) { connection in
            try await connection.query(
                """
                UPDATE episodes SET stopped_at = greatest(\(at), started_at), updated_at = \(now)
                WHERE campus_id = \(campus) AND user_id = \(user.rawValue) AND id = \(id) AND stopped_at IS NULL
                RETURNING \(Self.columns)
                """)
        }
        if let row = rows.first { return try episode(row, campus: campus, user: user) }
        guard try await find(campus: campus, user: user, id: id, now: now) != nil else { throw EpisodeError.notFound }
        throw EpisodeError.alreadyStopped
    }

    /// Replaces the episode's kind, severity, notes and times with `draft`'s (the caller merged
    /// a PATCH into it); its place and context stay.
    public func update(campus: CampusID, user: UserID, id: UUID, _ draft: EpisodeDraft, now: Date) async throws -> Episode {
        let sealed = try seal(draft.notes, campus: campus, user: user, id: id)
        do {
            let rows = try await transaction(campus: campus, user: user, now: now) { connection in
                try await connection.query(
                    """
                    UPDATE episodes SET kind = \(draft.kind), severity = \(Int16(clamping: draft.severity)), sealed = \(sealed),
                           started_at = \(draft.startedAt), stopped_at = \(draft.stoppedAt),
                           auto_closed = auto_closed AND stopped_at IS NOT DISTINCT FROM \(draft.stoppedAt), updated_at = \(now)
                    WHERE campus_id = \(campus) AND user_id = \(user.rawValue) AND id = \(id)
                    RETURNING \(Self.columns)
                    """)
            }
            guard let row = rows.first else { throw EpisodeError.notFound }
            return try episode(row, campus: campus, user: user)
        } catch let error as PostgresError where error.isUniqueViolation {
            let open = try await list(campus: campus, user: user, after: nil, limit: 100, now: now).episodes
                .first { $0.kind == draft.kind && $0.stoppedAt == nil && $0.id != id }
            throw EpisodeError.alreadyOpen(kind: draft.kind, id: open?.id ?? id)
        }
    }

    public func delete(campus: CampusID, user: UserID, id: UUID, now: Date) async throws -> Bool {
        try await transaction(campus: campus, user: user, now: now) { connection in
            try await connection.query(
                "DELETE FROM episodes WHERE campus_id = \(campus) AND user_id = \(user.rawValue) AND id = \(id)"
            ).affectedRows == 1
        }
    }
}

extension EpisodeStore {
    /// Starts an episode with the weather where and when it began, and at the same hour the
    /// day before, from the campus's context provider (`context`, within its budget), under
    /// the campus's quotas: the API's start and the pages' alike.
    public func start(campus: Campus, user: UserID, _ draft: EpisodeDraft, context: EpisodeContext, now: Date) async throws -> Episode {
        let (factors, dayBefore) = await context.factors(campus: campus.id, at: draft.startedAt, near: draft.location)
        return try await start(
            campus: campus.id, user: user, draft, context: factors, baseline: dayBefore, now: now, quotas: MemberQuotas(campus: campus))
    }
}

/// The weather around an episode's start, from the campus's context provider, within a
/// budget: a provider that fails or overruns leaves the episode without context (logged
/// without the place), never fails it.
public final class EpisodeContext: Sendable {
    let client: PostgresClient
    let registry: PluginRegistry
    let context: PluginContext
    let budget: Duration
    private let enabled = ExpiringCache<CampusID, CampusPluginStore.Enabled?>(ttl: .seconds(5))
    private let built = PluginInstances<any ContextProvider>()

    /// Where the campus's provider and its settings (the sealed ones opened with `kek`) are read.
    let plugins: CampusPluginStore

    public init(
        client: PostgresClient, registry: PluginRegistry, http: any PluginHTTPClient, logger: Logger, budget: Duration = .seconds(3),
        kek: KeyEncryptionKey? = nil
    ) {
        self.client = client
        self.plugins = CampusPluginStore(client: client, kek: kek)
        self.registry = registry
        self.context = PluginContext(http: http, logger: logger)
        self.budget = budget
    }

    /// The factors at `instant` and a day before, at `location`; nils when there is no
    /// provider, no place, or no answer in time.
    public func factors(campus: CampusID, at instant: Date, near location: CoarseLocation?) async -> (
        now: EnvironmentFactors?, dayBefore: EnvironmentFactors?
    ) {
        guard let location, let provider = await provider(campus: campus) else { return (nil, nil) }
        let context = self.context, budget = self.budget
        async let now = Self.ask(provider.provider, id: provider.id, at: instant, near: location, context: context, budget: budget)
        async let before = Self.ask(
            provider.provider, id: provider.id, at: instant.addingTimeInterval(-86_400), near: location, context: context, budget: budget)
        return (await now, await before)
    }

    private static func ask(
        _ provider: any ContextProvider, id: String, at instant: Date, near location: CoarseLocation, context: PluginContext,
        budget: Duration
    ) async -> EnvironmentFactors? {
        let outcome = await result(within: budget) { try await provider.factors(at: instant, near: location, context: context) }
        switch outcome {
        case .success(let factors)?: return factors.plausible.isEmpty ? nil : factors.plausible
        case .failure(let error)?:
            context.logger.warning(
                "context provider failed; the episode is kept without context", metadata: ["provider": "\(id)", "error": "\(error)"])
        case nil:
            context.logger.warning(
                "context provider overran its budget; the episode is kept without context", metadata: ["provider": "\(id)"])
        }
        return nil
    }

    private func provider(campus: CampusID) async -> (id: String, provider: any ContextProvider)? {
        let plugin: CampusPluginStore.Enabled?
        do {
            plugin = try await enabled.value(for: campus) { [plugins] in
                try await plugins.list(campus: campus, kind: .context).first
            }
        } catch {
            context.logger.warning("cannot read the campus's context provider", metadata: ["error": "\(error)"])
            return nil
        }
        guard let plugin, plugin.id != PluginRegistry.noContextProviderID else { return nil }
        do {
            let made = try built.instance(key: PluginInstances<any ContextProvider>.key(id: plugin.id, settings: plugin.settings)) {
                guard let made = try registry.makeContextProvider(id: plugin.id, settings: plugin.settings) else {
                    throw PluginSettingsError("\(plugin.id) answers nothing")
                }
                return made
            }
            return (plugin.id, made)
        } catch {
            context.logger.warning(
                "the campus's context provider cannot be built", metadata: ["provider": "\(plugin.id)", "error": "\(error)"])
            return nil
        }
    }
}

/// Episodes of a range summed up, by the rules docs/api.md documents: durations count closed
/// episodes only; a factor's average during episodes is over the episodes that have it, its
/// baseline over the same place and hour a day earlier.
public struct EpisodeSummary: Sendable, Equatable {
    public struct Factor: Sendable, Equatable {
        public var name: String
        public var unit: String
        public var during: Double?
        public var baseline: Double?
    }

    public struct Part: Sendable, Equatable {
        /// `2026-11`, or nil for the whole range.
        public var month: String?
        public var count: Int
        public var closed: Int
        public var totalMinutes: Int
        public var averageMinutes: Double?
        public var factors: [Factor]
    }

    public var total: Part
    public var months: [Part]
    /// Whether any episode's weather came from a made-up model (`EnvironmentFactors.madeUp`).
    public var madeUp: Bool

    /// `episodes` grouped by the month of their start in `zone`.
    public init(_ episodes: [Episode], zone: TimeZone) {
        madeUp = episodes.contains { $0.context?.madeUp == true || $0.baseline?.madeUp == true }
        func part(_ items: [Episode], month: String?) -> Part {
            let durations = items.compactMap(\.durationSeconds)
            let totalSeconds = durations.reduce(0) { $0 + min($1, 366 * 86_400) }
            let factors = EnvironmentFactors.units.enumerated().map { index, unit -> Factor in
                func average(_ pick: (Episode) -> EnvironmentFactors?) -> Double? {
                    let values = items.compactMap { pick($0)?.values[index].value }
                    return values.isEmpty ? nil : values.reduce(0, +) / Double(values.count)
                }
                return Factor(name: unit.name, unit: unit.unit, during: average(\.context), baseline: average(\.baseline))
            }
            return Part(
                month: month, count: items.count, closed: durations.count, totalMinutes: totalSeconds / 60,
                averageMinutes: durations.isEmpty ? nil : Double(totalSeconds) / 60 / Double(durations.count), factors: factors)
        }
        total = part(episodes, month: nil)
        let byMonth = Dictionary(grouping: episodes) { episode -> String in
            let date = LocalDate(episode.startedAt, in: zone)
            return String(format: "%04d-%02d", date.year, date.month)
        }
        months = byMonth.keys.sorted().map { part(byMonth[$0] ?? [], month: $0) }
    }
}
