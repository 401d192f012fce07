import ArgumentParser
import AttestPlugins
import AttestPostgres
import Foundation
import Surveys
import Tenancy

extension DevCommand {
    struct Seed: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add made-up members and a history of attestations to a campus, for trying things out and benchmarks.",
            discussion: """
                Members seed-TAG-N@DOMAIN are created DAYS days ago; each attests on about 92% of the days \
                before today (90% on time; about 85% green, 12% yellow, 3% red), with rollups. Answers are \
                kept only within the campus's retention. A campus with no survey gets the built-in demo \
                survey first. Rows are sent with binary COPY, 2,500 members per transaction on two \
                connections. Works on any database: --database-url, DATABASE_URL, or the dev cluster. \
                Connected as a superuser (as on the dev cluster), it skips the per-row foreign-key checks \
                of the rows it makes, whose references hold by construction; as any other role, the rows \
                go through a temporary table and every reference is checked, which is slower.
                """)

        @Option(help: "The campus slug.") var campus: String
        @Option(help: "How many members to add.") var members: Int
        @Option(help: "How many days of history before today.") var days: Int
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var logging: LoggingOptions

        func validate() throws {
            guard (1...5_000_000).contains(members) else { throw ValidationError("--members must be from 1 to 5000000") }
            guard (1...3_650).contains(days) else { throw ValidationError("--days must be from 1 to 3650") }
        }

        func run() async throws {
            let started = ContinuousClock.now
            var database = self.database
            database.dbPoolSize = max(database.dbPoolSize, 3)
            let outcome = try await TenantContext.run(database: database, logging: logging) { context in
                let found = try await context.campuses.require(slug: campus)
                let seeder = HistorySeeder(client: context.client)
                _ = try await seeder.preflight()
                let store = QuestionnaireStore(client: context.client)
                let questionnaire: Questionnaire
                if let active = try await store.active(campus: found.id) {
                    questionnaire = active
                } else {
                    questionnaire = try await store.publish(campus: found, draft: DemoQuestionnaire.draft, actor: TenantContext.actor)
                    say("\(campus) had no survey: published the demo survey as version \(questionnaire.version).")
                }
                return try await seeder.seed(
                    campus: found, questionnaire: questionnaire, members: members, days: days)
            }
            let elapsed = ContinuousClock.now - started
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            say(
                "Seeded \(campus): \(outcome.members) members, \(outcome.attestations) attestations from \(outcome.from) to \(outcome.to) "
                    + "in \(String(format: "%.1f", seconds)) s"
                    + (outcome.checkedReferences ? "." : " (as a superuser: per-row foreign-key checks skipped)."))
        }
    }
}
