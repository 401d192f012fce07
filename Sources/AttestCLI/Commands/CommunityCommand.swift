import ArgumentParser
import AttestFoundation
import AttestPlugins
import AttestPostgres
import Community
import Foundation
import Tenancy

struct CommunityCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "community", abstract: "Community figures imported for the `imported` provider (shared by every campus).",
        subcommands: [Import.self, List.self, Remove.self])
}

extension CommunityCommand {
    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Import a CSV as a dataset, replacing the dataset whole; a bad row is named by line and nothing changes.",
            discussion: """
                Layouts (--layout): county, date,county,state,fips,cases,deaths (running totals, the \
                default); state, date,state,fips,cases,deaths; national, date,cases,deaths (one nation's \
                running totals, its region the --region code, US by default); global, a row per country \
                and day: date,location,iso_code with new_cases,new_deaths or total_cases,total_deaths, \
                and population (Our World in Data's layout; the world is region WORLD, a country its ISO \
                3166-1 alpha-2 code). A population file (a header naming fips or id, and population) gives \
                the per-100,000 figures and risk levels. Then a campus uses it with
                  attest plugin enable <campus> community-data imported --settings '{"dataset": ["NAME", "us-national", "world"]}'
                  attest campus set <campus> region <fips>
                Run it as the database's owner (the role that runs `attest migrate`): the servers may only read.
                """)
        @Argument(help: "The CSV file.") var file: String
        @Option(help: "The dataset's name (a-z, 0-9, '.', '_', '-'), such as us-counties.") var dataset: String
        @Option(help: "county, state, national or global.") var layout: String = CommunityLayout.county.rawValue
        @Option(help: "The national layout's nation: an ISO 3166-1 alpha-2 code.") var region: String = "US"
        @Option(help: "A population CSV (fips or id, and population).") var population: String?
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var logging: LoggingOptions

        func validate() throws {
            guard PluginRegistry.isValidID(dataset) else {
                throw ValidationError("--dataset must be 1 to 64 of a-z, 0-9, '.', '_' and '-', such as us-counties")
            }
            guard CommunityLayout(rawValue: layout) != nil else {
                throw ValidationError("--layout must be county, state, national or global, got \"\(layout)\"")
            }
            guard Countries.name(alpha2: region) != nil else {
                throw ValidationError("--region must be an ISO 3166-1 alpha-2 code in capitals, such as US or CA, got \"\(region)\"")
            }
        }

        func run() async throws {
            func read(_ path: String, _ what: String) throws -> Data { try readFile(path, "the path of " + what) }
            let layout = CommunityLayout(rawValue: layout) ?? .county
            let data = try read(file, "a CSV of the \(layout.rawValue) layout (\(layout.header))")
            let people = try population.map { try read($0, "a population CSV (fips or id, and population)") }
            let parsed: CommunityDataset
            do { parsed = try layout.parse(data, region: region, population: people) } catch let error as CommunityDataFileError {
                throw CLIError("\(file) \(error)")
            } catch let error as CSV.UnclosedQuote {
                throw CLIError("\(file) line \(error.line): a quoted field is never closed; nothing was imported")
            }
            let logger = logging.makeLogger(label: "attest")
            let owner = try database.ownerClient(logger: logger)
            let stored = try await runningService(owner) {
                do { return try await CommunityStore(client: owner).replace(dataset: dataset, with: parsed) } catch let error
                    as PostgresError
                    where error.sqlState == "42501"
                {
                    throw CLIError(
                        "this database login may not change community data: import as the database's owner (the role that runs `attest migrate`)"
                    )
                }
            }
            let latest = parsed.latestDate.map { ", latest \($0)" } ?? ""
            say(
                "Imported \(stored.regions) region\(stored.regions == 1 ? "" : "s") and \(stored.days) day\(stored.days == 1 ? "" : "s") as \(dataset)\(latest)."
            )
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The imported datasets.")
        @Flag(help: "Print JSON.") var json = false
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var logging: LoggingOptions

        func run() async throws {
            let datasets = try await TenantContext.run(database: database, logging: logging) { context in
                try await CommunityStore(client: context.client).datasets()
            }
            if json {
                return printJSONObject(
                    datasets.map { item -> [String: Any] in
                        [
                            "dataset": item.dataset, "regions": item.regions, "days": item.days,
                            "latest": item.latest?.description ?? NSNull(),
                        ]
                    })
            }
            if datasets.isEmpty { return say("No community data imported: `attest community import FILE.csv --dataset NAME` adds some.") }
            for item in datasets {
                say("\(item.dataset)  \(item.regions) regions  \(item.days) days  latest \(item.latest?.description ?? "(none)")")
            }
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete an imported dataset whole; refused while a campus's community-data plugin names it.",
            discussion: "Run it as the database's owner (the role that runs `attest migrate`), as `import`.")
        @Option(help: "The dataset's name, as `attest community list` shows it.") var dataset: String
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var logging: LoggingOptions

        func run() async throws {
            // Whichever campus reads it would lose its figures: named, with the way to stop it.
            let users = try await TenantContext.run(database: database, logging: logging) { context in
                var users: [String] = []
                let plugins = CampusPluginStore(client: context.client)
                for campus in try await context.campuses.list() {
                    let settings = try await plugins.settings(campus: campus.id, kind: .communityData, id: "imported")
                    let named: [JSONValue] =
                        switch settings?["dataset"] {
                        case .array(let names)?: names
                        case let one?: [one]
                        case nil: []
                        }
                    if named.contains(.string(dataset)) { users.append(campus.slug) }
                }
                return users
            }
            if let first = users.first {
                throw CLIError(
                    "\(dataset) is read by \(users.joined(separator: ", ")): enable `imported` there without it first "
                        + "(`attest plugin enable \(first) community-data imported --settings …`), then remove it")
            }
            let logger = logging.makeLogger(label: "attest")
            let owner = try database.ownerClient(logger: logger)
            let removed = try await runningService(owner) {
                do { return try await CommunityStore(client: owner).remove(dataset: dataset) } catch let error as PostgresError
                    where error.sqlState == "42501"
                {
                    throw CLIError(
                        "this database login may not change community data: remove as the database's owner (the role that runs `attest migrate`)"
                    )
                }
            }
            guard removed else { throw CLIError("no dataset \(dataset): `attest community list` shows the imported ones") }
            say("Removed the dataset \(dataset).")
        }
    }
}
