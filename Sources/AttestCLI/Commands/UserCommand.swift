import ArgumentParser
import AttestPlugins
import Foundation
import Identity
import Tenancy

struct UserCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "user", abstract: "Add, import and list a campus's users.",
        subcommands: [Add.self, Import.self, List.self])
}

extension UserCommand {
    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Add a member.")
        @Argument var campus: String
        @Argument var email: String
        @Option(help: "Display name.") var name = ""
        @Flag(help: "Print JSON.") var json = false
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var logging: LoggingOptions

        func run() async throws {
            let user = try await TenantContext.run(database: database, logging: logging) { context in
                let campus = try await context.campuses.require(slug: campus)
                return try await context.users.add(campus: campus, email: email, displayName: name, actor: TenantContext.actor)
            }
            if json { printJSONObject(user.jsonObject) } else { say("Added \(user.email) to \(campus).") }
        }
    }

    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Import users from CSV: email,name[,roles] (roles separated by ';'). All or nothing.")
        @Argument var campus: String
        @Argument(help: "The CSV file.") var file: String
        @Flag(help: "Print JSON.") var json = false
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var logging: LoggingOptions

        func run() async throws {
            let text: String
            do { text = try String(contentsOfFile: file, encoding: .utf8) } catch {
                throw CLIError("cannot read \(file): it must be a UTF-8 CSV file with columns email,name[,roles]")
            }
            let report = try await TenantContext.run(database: database, logging: logging) { context in
                let campus = try await context.campuses.require(slug: campus)
                return try await context.users.importCSV(campus: campus, text: text, actor: TenantContext.actor)
            }
            if json {
                printJSONObject(["created": report.created, "updated": report.updated, "rolesGranted": report.rolesGranted])
            } else {
                say("Imported into \(campus): \(report.created) created, \(report.updated) updated, \(report.rolesGranted) roles granted.")
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List users with their roles.")
        @Argument var campus: String
        @Flag(help: "Print JSON.") var json = false
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var logging: LoggingOptions

        func run() async throws {
            let users = try await TenantContext.run(database: database, logging: logging) { context in
                try await context.users.list(campus: try await context.campuses.require(slug: campus).id)
            }
            if json { return printJSONObject(users.map(\.jsonObject)) }
            for user in users { say("\(user.email)\t\(user.roles.map(\.rawValue).joined(separator: ","))\t\(user.displayName)") }
        }
    }
}
