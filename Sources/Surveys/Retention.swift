import AttestPlugins
import AttestPostgres
import Foundation
import Logging
import ServiceLifecycle
import Tenancy

/// Retention: removes attestation answers (the health data) older than the campus's
/// `retention-days`. The attestation row (date, badge, on time) and the rollups stay, so
/// statistics and dashboards are unchanged by a purge.
///
/// Answers of campus-local dates before `today − retention-days` are set to NULL, one day per
/// transaction, oldest first; `purge_state.purged_before` records how far it got, so a purge
/// that stops half-way resumes where it stopped and a later one starts there.
public struct RetentionPurger: Sendable {
    public struct Outcome: Sendable, Equatable {
        public var campus: String
        /// Answers of dates before this are purged (or would be, on a dry run).
        public var cutoff: LocalDate
        /// How many attestations lost their answers (would, on a dry run).
        public var purged: Int
        public var dryRun: Bool
    }

    let client: PostgresClient

    public init(client: PostgresClient) { self.client = client }

    /// The first date whose answers are kept at `now`.
    public static func cutoff(campus: Campus, now: Date) -> LocalDate {
        campus.localDate(at: now).adding(days: -campus.retentionDays)
    }

    /// Purges one campus (or counts what it would purge, with `dryRun`). A real purge that
    /// removed something is audited with `actor`.
    public func purge(campus: Campus, now: Date, dryRun: Bool, actor: String) async throws -> Outcome {
        let cutoff = Self.cutoff(campus: campus, now: now)
        let id = campus.id
        let start: LocalDate? = try await client.withTransaction(campus: id.rawValue) { connection in
            let state = try await connection.query("SELECT purged_before FROM purge_state WHERE campus_id = \(id)")
            if let purgedBefore = try state.first?.decode("purged_before", as: LocalDate?.self) { return purgedBefore }
            return try await connection.query(
                "SELECT min(local_date) AS first FROM attestations WHERE campus_id = \(id) AND answers IS NOT NULL"
            ).first?.decode("first", as: LocalDate?.self)
        }
        var outcome = Outcome(campus: campus.slug, cutoff: cutoff, purged: 0, dryRun: dryRun)
        guard let start, start < cutoff else { return outcome }
        if dryRun {
            outcome.purged = try await client.query(
                """
                SELECT count(*) AS n FROM attestations
                WHERE campus_id = \(id) AND local_date >= \(start) AND local_date < \(cutoff) AND answers IS NOT NULL
                """, campus: id.rawValue
            ).first?.decode("n", as: Int.self) ?? 0
            return outcome
        }
        var date = start
        while date < cutoff {
            let day = date
            outcome.purged += try await client.withTransaction(campus: id.rawValue) { connection in
                let purged = try await connection.query(
                    """
                    WITH purged AS (
                        UPDATE attestations SET answers = NULL, answers_purged_at = now()
                        WHERE campus_id = \(id) AND local_date = \(day) AND answers IS NOT NULL
                        RETURNING 1
                    )
                    SELECT count(*) AS n FROM purged
                    """
                ).first?.decode("n", as: Int.self) ?? 0
                try await connection.query(
                    """
                    INSERT INTO purge_state AS p (campus_id, purged_before) VALUES (\(id), \(day.adding(days: 1)))
                    ON CONFLICT (campus_id) DO UPDATE
                    SET purged_before = greatest(p.purged_before, EXCLUDED.purged_before)
                    """)
                return purged
            }
            date = date.adding(days: 1)
        }
        if outcome.purged > 0 {
            try await client.withTransaction(campus: id.rawValue) { connection in
                try await AuditLog.record(
                    connection, campus: id, actor: actor, action: "answers.purged", target: "before \(cutoff)",
                    details: ["before": cutoff.description, "attestations": "\(outcome.purged)"])
            }
        }
        return outcome
    }

    /// Claims today's daily purge of `campus` for this server: true for exactly one caller
    /// per campus-local day, however many servers ask.
    public func claimDailyRun(campus: Campus, now: Date) async throws -> Bool {
        let today = campus.localDate(at: now)
        return try await !client.query(
            """
            INSERT INTO purge_state AS p (campus_id, last_daily_run) VALUES (\(campus.id), \(today))
            ON CONFLICT (campus_id) DO UPDATE SET last_daily_run = EXCLUDED.last_daily_run
            WHERE p.last_daily_run IS DISTINCT FROM EXCLUDED.last_daily_run
            RETURNING campus_id
            """, campus: campus.id.rawValue
        ).isEmpty
    }
}

/// Runs the daily upkeep once a campus-local day per campus, on whichever server claims the
/// day first: the retention purge, then the rollup compaction (`StatisticsStore.compact`) of
/// the days before yesterday. A `Service` every server runs.
public final class RetentionService: Service, Sendable {
    let purger: RetentionPurger
    let statistics: StatisticsStore
    let campuses: CampusStore
    let interval: Duration
    let logger: Logger
    let clock: @Sendable () -> Date
    /// The other modules' daily work (expired sessions and the like), after the purge.
    let upkeeps: [any DailyUpkeep]

    public init(
        client: PostgresClient, interval: Duration = .seconds(600), logger: Logger, clock: @escaping @Sendable () -> Date = { Date() },
        upkeeps: [any DailyUpkeep] = []
    ) {
        self.upkeeps = upkeeps
        self.purger = RetentionPurger(client: client)
        self.statistics = StatisticsStore(client: client)
        self.campuses = CampusStore(client: client)
        self.interval = interval
        self.logger = logger
        self.clock = clock
    }

    public func run() async throws {
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            await runOnce()
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: self.interval) }
        }
    }

    /// Purges every campus whose day this server claims; returns what it did. A campus that
    /// fails is logged and does not stop the others; its purge resumes on its next day.
    @discardableResult
    public func runOnce() async -> [RetentionPurger.Outcome] {
        let all: [Campus]
        do { all = try await campuses.list() } catch {
            // Cancelled: the server is stopping (or could not start); nothing failed.
            if !Task.isCancelled { logger.warning("retention purge: cannot list campuses", metadata: ["error": "\(error)"]) }
            return []
        }
        var outcomes: [RetentionPurger.Outcome] = []
        for campus in all {
            do {
                guard try await purger.claimDailyRun(campus: campus, now: clock()) else { continue }
                let now = clock()
                let outcome = try await purger.purge(campus: campus, now: now, dryRun: false, actor: "system:retention")
                // Yesterday may still get a batch written just after midnight; older days are final.
                let folded = try await statistics.compact(campus: campus.id, before: campus.localDate(at: now).adding(days: -1))
                var metadata: Logger.Metadata = [
                    "campus": "\(campus.slug)", "purged_before": "\(outcome.cutoff)", "attestations_purged": "\(outcome.purged)",
                    "rollup_rows_folded": "\(folded)",
                ]
                for upkeep in upkeeps {
                    for (key, count) in try await upkeep.run(campus: campus, now: now) { metadata[key] = "\(count)" }
                }
                logger.info("daily upkeep", metadata: metadata)
                outcomes.append(outcome)
            } catch {
                if Task.isCancelled {
                    logger.info("daily upkeep stopped with the server; a later run resumes it", metadata: ["campus": "\(campus.slug)"])
                    break
                }
                logger.warning(
                    "retention purge failed; the campus's next daily run resumes it",
                    metadata: ["campus": "\(campus.slug)", "error": "\(error)"])
            }
        }
        return outcomes
    }
}
