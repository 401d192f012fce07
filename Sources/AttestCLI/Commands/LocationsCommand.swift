import ArgumentParser
import AttestPlugins
import Community
import Foundation
import Tenancy

struct LocationsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "locations", abstract: "A campus's own testing locations (the static provider).",
        subcommands: [Import.self, List.self, Remove.self])
}

extension LocationsCommand {
    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add locations from CSV or JSON; a bad row is named by line and nothing is added.",
            discussion: """
                CSV: a header naming the columns (name, address, lat, lon, hours, phone, url, notes; name, lat \\
                and lon required), then one location per line. JSON: a list of objects with the same fields.
                """)
        @Argument var campus: String
        @Argument(help: "FILE.csv or FILE.json") var file: String
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var logging: LoggingOptions

        func run() async throws {
            let locations = try TestingLocationStore.parse(try readTextFile(file, "the path of a CSV or JSON file of locations"))
            let count = try await TenantContext.run(database: database, logging: logging) { context in
                let found = try await context.campuses.require(slug: campus)
                return try await TestingLocationStore(client: context.client).add(campus: found, locations, actor: TenantContext.actor)
            }
            say("Imported \(count) testing location\(count == 1 ? "" : "s") for \(campus).")
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The campus's own locations.")
        @Argument var campus: String
        @Flag(help: "Print JSON.") var json = false
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var logging: LoggingOptions

        func run() async throws {
            let stored = try await TenantContext.run(database: database, logging: logging) { context in
                let found = try await context.campuses.require(slug: campus)
                return try await TestingLocationStore(client: context.client).list(campus: found.id)
            }
            if json {
                return printJSONObject(
                    stored.map { item -> [String: Any] in
                        let location = item.location
                        return [
                            "id": item.id.lowercasedText, "name": location.name, "address": location.address,
                            "lat": location.latitude, "lon": location.longitude, "hours": location.hours, "phone": location.phone,
                            "url": location.url, "notes": location.notes,
                        ]
                    })
            }
            if stored.isEmpty { return say("\(campus) has no locations of its own: add some with `attest locations import`.") }
            for item in stored {
                say(
                    "\(item.id.lowercasedText)  \(item.location.name)  (\(item.location.latitude), \(item.location.longitude))  \(item.location.address)"
                )
            }
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove one location by id, or --all.")
        @Argument var campus: String
        @Argument(help: "The location's id (`attest locations list`).") var id: String?
        @Flag(help: "Remove every location of the campus.") var all = false
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var logging: LoggingOptions

        func validate() throws {
            guard (id == nil) == all else { throw ValidationError("give a location id or --all") }
        }

        func run() async throws {
            var target: UUID?
            if let id {
                guard let parsed = UUID(uuidString: id) else {
                    throw CLIError("\(id) is not a location id: `attest locations list \(campus)` shows them")
                }
                target = parsed
            }
            let removed = try await TenantContext.run(database: database, logging: logging) { context in
                let found = try await context.campuses.require(slug: campus)
                return try await TestingLocationStore(client: context.client).remove(campus: found, id: target, actor: TenantContext.actor)
            }
            if let id, removed == 0 { throw CLIError("\(campus) has no location \(id): `attest locations list \(campus)` shows them") }
            say("Removed \(removed) location\(removed == 1 ? "" : "s") from \(campus).")
        }
    }
}
