import ArgumentParser
import AttestPlugins
import AttestPostgres
import Foundation
import Identity
import Notifications
import Records
import Surveys
import Tenancy

struct PurgeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "purge",
        abstract: "Remove attestation answers, health records and guests older than each campus's retention (rollups and badges stay).",
        discussion: """
            Answers of campus-local dates before today minus the campus's retention-days are set to \
            null, a day per transaction, oldest first; a purge that stops resumes where it stopped. \
            Health records that can no longer weigh on a badge go too (see the README's Health records), and \
            guests' visits older than guest-retention-days (14 by default), and notification events delivered \
            over 7 days ago or dead over 30 days ago (neither kept longer than retention-days). \
            Every server also does this once a day per campus.
            """)

    @Option(help: "Only this campus (default: every campus).") var campus: String?
    @Flag(help: "Count what would be purged; change nothing.") var dryRun = false
    @Flag(help: "Print JSON.") var json = false
    @OptionGroup var database: DatabaseOptions
    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        let dryRun = self.dryRun
        let outcomes = try await TenantContext.run(database: database, logging: logging) { context in
            let campuses: [Campus]
            if let campus {
                campuses = [try await context.campuses.require(slug: campus)]
            } else {
                campuses = try await context.campuses.list()
            }
            var outcomes: [(RetentionPurger.Outcome, [String: Int], Int, Int)] = []
            for found in campuses {
                let answers = try await RetentionPurger(client: context.client).purge(
                    campus: found, now: Date(), dryRun: dryRun, actor: TenantContext.actor)
                let records =
                    dryRun ? [:] : try await RecordsUpkeep(records: HealthRecords(client: context.client)).run(campus: found, now: Date())
                let guests = dryRun ? [:] : try await GuestUpkeep(client: context.client).run(campus: found, now: Date())
                let outbox = dryRun ? [:] : try await OutboxUpkeep(client: context.client).run(campus: found, now: Date())
                outcomes.append((answers, records, guests["guests_purged"] ?? 0, outbox["outbox_purged"] ?? 0))
            }
            return outcomes
        }
        if json {
            return printJSONObject(
                outcomes.map { outcome, records, guests, events -> [String: Any] in
                    [
                        "campus": outcome.campus, "before": outcome.cutoff.description, "attestations": outcome.purged,
                        "dryRun": outcome.dryRun, "healthRecords": records, "guests": guests,
                        "outboxEvents": events,
                    ]
                })
        }
        for (outcome, records, guests, events) in outcomes {
            let what = "\(outcome.purged) attestation\(outcome.purged == 1 ? "" : "s")"
            say(
                outcome.dryRun
                    ? "\(outcome.campus): would remove the answers of \(what) from before \(outcome.cutoff)."
                    : "\(outcome.campus): removed the answers of \(what) from before \(outcome.cutoff)"
                        + "; \(records.values.reduce(0, +)) health records that no longer weigh on a badge"
                        + "; \(guests) guest visit\(guests == 1 ? "" : "s") past the guest retention"
                        + "; \(events) notification event\(events == 1 ? "" : "s") past their keeping.")
        }
    }
}
