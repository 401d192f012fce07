import ArgumentParser
import AttestPlugins
import Foundation
import Identity
import Tenancy

struct AuditCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit", abstract: "Show a campus's audit log, oldest first.")
    @Argument var campus: String
    @Option(help: "Only entries from this campus-local date (YYYY-MM-DD) on.") var since: String?
    @Flag(help: "Print JSON.") var json = false
    @OptionGroup var database: DatabaseOptions
    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        if let since, LocalDate(since) == nil {
            throw ValidationError("--since must be a date YYYY-MM-DD, such as 2026-09-01")
        }
    }

    func run() async throws {
        let entries = try await TenantContext.run(database: database, logging: logging) { context in
            let campus = try await context.campuses.require(slug: campus)
            let start = since.flatMap(LocalDate.init).map(campus.startOfDay)
            return try await context.audit.entries(campus: campus.id, since: start)
        }
        if json {
            return printJSONObject(
                entries.map {
                    [
                        "id": $0.id.lowercasedText, "at": $0.at.ISO8601Format(), "actor": $0.actor, "action": $0.action,
                        "target": $0.target, "details": $0.details,
                    ]
                        as [String: Any]
                })
        }
        for entry in entries {
            let details = entry.details.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            say("\(entry.at.ISO8601Format())\t\(entry.actor)\t\(entry.action)\t\(entry.target)\t\(details)")
        }
    }
}
