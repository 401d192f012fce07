import ArgumentParser
import AttestPlugins
import Foundation
import Records
import Tenancy

/// `attest results import`: a testing site's results from a CSV file (the README, "Health records").
struct ResultsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "results", abstract: "Laboratory test results.", subcommands: [Import.self])

    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Import test results from a CSV file, all or none; prints what was matched and corrected. Audited.",
            discussion: """
                The file has the header \(ResultsCSV.header.joined(separator: ",")) and one result a line: \
                member is the member's email; collected_at and resulted_at ISO 8601 with an offset, or dates \
                (the campus's zone); test_code a LOINC SARS-CoV-2 code; result detected or not detected. \
                A specimen already known is corrected. Results that match no member wait for a health officer \
                (GET /v1/campuses/<campus>/health/results?unmatched=true). Every problem is named by line and column.
                """)
        @Argument(help: "The campus slug.") var campus: String
        @Argument(help: "The CSV file (- for standard input).") var file: String
        @Flag(help: "Print the outcome as JSON.") var json = false
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var logging: LoggingOptions

        func run() async throws {
            let data =
                file == "-"
                ? FileHandle.standardInput.readDataToEndOfFile()
                : try readFile(file, "the path of a CSV file of results (specimen_id,member,collected_at,resulted_at,test_code,result)")
            let receipt = try await TenantContext.run(database: database, logging: logging) { context in
                let found = try await context.campuses.require(slug: campus)
                let (results, problems) = ResultsCSV.parse(data, zone: found.zone, now: Date())
                guard problems.isEmpty else {
                    throw CLIError(
                        "\(file) was not imported (nothing was stored):\n"
                            + problems.map { "  \($0.field): \($0.message)" }.joined(separator: "\n"))
                }
                return try await HealthRecords(client: context.client).receive(
                    campus: found, results: results, source: "import", actor: TenantContext.actor)
            }
            if json {
                return printJSONObject([
                    "received": receipt.received, "matched": receipt.matched, "unmatched": receipt.unmatched,
                    "corrected": receipt.corrected, "statusesChanged": receipt.statusesChanged,
                ])
            }
            say(
                "Imported \(receipt.received) results into \(campus): \(receipt.matched) matched, \(receipt.unmatched) waiting for a health officer, "
                    + "\(receipt.corrected) corrected; \(receipt.statusesChanged) members' status changed.")
        }
    }
}
