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
            outcome.purged =
                try await client.query(
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
                let purged =
                    try await connection.query(
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
///
/// Each campus's upkeep comes due at its own minute of the small hours
/// (`CampusSchedule.upkeepMinute`), so a server asks once, across campuses, which are due
/// (`attest_schedule_due`) and sleeps until the next one: campuses cost nothing between.
public final class RetentionService: Service, Sendable {
    let purger: RetentionPurger
    let statistics: StatisticsStore
    let campuses: CampusStore
    let schedule: CampusSchedule
    /// The longest a server sleeps before it looks again (a campus whose zone changed, one
    /// created on another server). Default 10 min.
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
        self.schedule = CampusSchedule(client: client)
        self.interval = interval
        self.logger = logger
        self.clock = clock
    }

    public func run() async throws {
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            let next = await runRound()
            var pause = interval
            if let next { pause = min(pause, .milliseconds(Int64(min(max(next.timeIntervalSince(clock()), 1), 86_400) * 1_000))) }
            let sleep = pause
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: sleep) }
        }
    }

    /// Does the upkeep of every campus now due; returns what it purged.
    @discardableResult
    public func runOnce() async -> [RetentionPurger.Outcome] {
        var outcomes: [RetentionPurger.Outcome] = []
        _ = await runRound { outcomes.append($0) }
        return outcomes
    }

    /// The upkeep of every campus now due (a few hundred at most: the rest at once after);
    /// returns when the next campus comes due. A campus that fails is logged, does not stop
    /// the others, and is looked at again in ten minutes.
    private func runRound(_ done: (RetentionPurger.Outcome) -> Void = { _ in }) async -> Date? {
        // 10,000 campuses due at once (the first start after this schema) in 50 reads; a
        // campus that cannot be moved on is not read again and again.
        for _ in 0..<50 {
            let due: CampusSchedule.Due
            do { due = try await schedule.due(.upkeep, at: clock(), limit: 200) } catch {
                // Cancelled: the server is stopping (or could not start); nothing failed.
                if !Task.isCancelled { logger.warning("daily upkeep: cannot read which campuses are due", metadata: ["error": "\(error)"]) }
                return nil
            }
            for id in due.campuses {
                if Task.isCancelled { return nil }
                await upkeep(id, done)
            }
            if due.campuses.count < 200 { return due.next }
        }
        return nil
    }

    private func upkeep(_ id: CampusID, _ done: (RetentionPurger.Outcome) -> Void) async {
        var slug = "\(id)"
        do {
            guard let campus = try await campuses.find(id: id) else { return }
            slug = campus.slug
            let now = clock()
            var next = CampusSchedule.next(minute: CampusSchedule.upkeepMinute(id), in: campus.zone, after: now)
            if try await purger.claimDailyRun(campus: campus, now: now) {
                do {
                    done(try await runDaily(campus, now: now))
                } catch {
                    if Task.isCancelled {
                        logger.info("daily upkeep stopped with the server; a later run resumes it", metadata: ["campus": "\(slug)"])
                        return
                    }
                    logger.warning(
                        "retention purge failed; the campus's next daily run resumes it",
                        metadata: ["campus": "\(slug)", "error": "\(error)"])
                    next = now.addingTimeInterval(600)
                }
            }
            try await schedule.schedule(.upkeep, campus: id, at: next)
        } catch {
            if !Task.isCancelled {
                logger.warning(
                    "daily upkeep: cannot look at a campus; trying again in ten minutes",
                    metadata: ["campus": "\(slug)", "error": "\(error)"])
                try? await schedule.schedule(.upkeep, campus: id, at: clock().addingTimeInterval(600))
            }
        }
    }

    private func runDaily(_ campus: Campus, now: Date) async throws -> RetentionPurger.Outcome {
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
        return outcome
    }
}
