import ArgumentParser
import Foundation
import Surveys
import Tenancy

extension DevCommand {
    struct SeedCampuses: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "seed-campuses",
            abstract: "Create many made-up campuses at once, for trying out and measuring a server with many tenants.",
            discussion: """
                Campuses PREFIX-1 … PREFIX-COUNT are created as `attest campus create` creates each (a badge key \
                sealed with the key-encryption key, an entry in its audit log), in the zones given in turn, four \
                at a time; a slug that exists is left as it is, so a second run adds only what is missing. \
                Works on any database: --database-url, DATABASE_URL, or the dev cluster.
                """)

        @Option(help: "How many campuses.") var count: Int
        @Option(help: "The slugs' prefix.") var prefix = "tenant"
        @Option(name: .customLong("timezone"), help: "An IANA time zone the campuses take in turn (repeatable). Default: America/New_York.")
        var timeZones: [String] = []
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var keys: KeyOptions
        @OptionGroup var logging: LoggingOptions

        func validate() throws {
            guard (1...100_000).contains(count) else { throw ValidationError("--count must be from 1 to 100000") }
            guard CampusStore.isValidSlug("\(prefix)-\(count)") else {
                throw ValidationError(
                    "--prefix must make slugs of a-z, 0-9 and '-', at most 40 characters with the number: \(prefix)-\(count) does not")
            }
            for zone in timeZones where !CampusStore.isKnownTimeZone(zone) {
                throw ValidationError("--timezone \(zone) is not an IANA time zone (such as America/New_York)")
            }
        }

        func run() async throws {
            let kek = try keys.require(for: database)
            let started = ContinuousClock.now
            let zones = timeZones.isEmpty ? ["America/New_York"] : timeZones
            var database = self.database
            database.dbPoolSize = max(database.dbPoolSize, 4)
            let (count, prefix) = (count, prefix)
            let created = try await TenantContext.run(database: database, logging: logging, sealingWith: kek) { context in
                let keys = BadgeKeyStore(client: context.client, kek: kek)
                return try await withThrowingTaskGroup(of: Int.self) { group in
                    for lane in 0..<4 {
                        group.addTask {
                            var made = 0
                            for number in stride(from: 1 + lane, through: count, by: 4) {
                                let new = NewCampus(
                                    slug: "\(prefix)-\(number)", name: "\(prefix.capitalized) \(number)",
                                    timeZone: zones[(number - 1) % zones.count])
                                do {
                                    _ = try await context.campuses.create(new, actor: TenantContext.actor, setUp: keys.provision)
                                    made += 1
                                } catch CampusError.duplicateSlug { continue }
                            }
                            return made
                        }
                    }
                    return try await group.reduce(0, +)
                }
            }
            let elapsed = ContinuousClock.now - started
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            say("Created \(created) campuses (\(count - created) existed) in \(String(format: "%.1f", seconds)) s.")
        }
    }
}
