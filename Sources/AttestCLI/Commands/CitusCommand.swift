import ArgumentParser
import AttestSchema
import Foundation

struct CitusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "citus",
        abstract: "Lay the schema out on a Citus cluster (campuses as the unit of sharding).",
        subcommands: [Distribute.self, Script.self]
    )

    struct Distribute: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Distribute every tenant table by campus_id on a Citus coordinator (as the schema's owner, after migrate).",
            discussion: "Refuses a database without the citus extension, and one where the tables are distributed already."
        )
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var logging: LoggingOptions

        func run() async throws {
            let logger = logging.makeLogger(label: "attest.citus")
            let client = try database.ownerClient(logger: logger, maxConnections: 1)
            do {
                let count = try await withShutdown(client) { try await CitusLayout.distribute(client) }
                say(
                    "Distributed \(count) tables: \(CitusLayout.referenceTables.count) reference tables, the rest by campus_id, co-located."
                )
            } catch let refusal as CitusLayout.Refusal {
                throw CLIError("cannot distribute: \(refusal)")
            }
        }
    }

    struct Script: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print the distribution script (deploy/citus/distribute.sql).")
        func run() { print(CitusLayout.script, terminator: "") }
    }
}
