import ArgumentParser
import AttestPlugins
import AttestServer
import Foundation
import Identity
import Records
import Tenancy

struct UserCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "user", abstract: "Add, import, list, deactivate, reactivate and erase a campus's users.",
        subcommands: [Add.self, Import.self, List.self, Deactivate.self, Reactivate.self, Erase.self, BirthDate.self])

    /// `deactivate` and `reactivate`.
    static func setActive(
        _ active: Bool, campus: String, email: String, database: DatabaseOptions, logging: LoggingOptions
    ) async throws -> (changed: Bool, sessionsRevoked: Int) {
        try await TenantContext.run(database: database, logging: logging) { context in
            try await context.users.setActive(
                campus: try await context.campuses.require(slug: campus), email: email, active: active, actor: TenantContext.actor)
        }
    }
}

extension UserCommand {
    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Add a member.")
        @Argument var campus: String
        @Argument var email: String
        @Option(help: "Display name.") var name = ""
        @Option(help: "The member's campus id (a student or employee number), which laboratories may name them by.")
        var memberId: String?
        @Flag(help: "Print JSON.") var json = false
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var logging: LoggingOptions

        func run() async throws {
            if let memberId, LabResult.memberID(memberId) == nil {
                throw CLIError("--member-id must be 1 to 100 characters without spaces, got \"\(memberId)\"")
            }
            let user = try await TenantContext.run(database: database, logging: logging) { context in
                let campus = try await context.campuses.require(slug: campus)
                return try await context.users.add(
                    campus: campus, email: email, displayName: name, memberID: memberId, actor: TenantContext.actor)
            }
            if json { printJSONObject(user.jsonObject) } else { say("Added \(user.email) to \(campus).") }
        }
    }

    struct BirthDate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "birth-date",
            abstract: "Record a member's birth date (or clear it with `none`), compared with their SMART Health Cards'. Audited.",
            discussion: """
                Members whose identity provider sends the OpenID Connect birthdate claim get it at sign-in; this \
                sets it for the others. A campus with shc-identity strict refuses cards of members whose birth \
                date it does not know.
                """)
        @Argument var campus: String
        @Argument var email: String
        @Argument(help: "YYYY-MM-DD, or none.") var date: String

        @OptionGroup var database: DatabaseOptions
        @OptionGroup var logging: LoggingOptions

        func run() async throws {
            guard date == "none" || VerifiedIdentity.birthDate(date) != nil else {
                throw CLIError("the date must be YYYY-MM-DD (from 1900), or none to clear it; got \"\(date)\"")
            }
            let birthDate = VerifiedIdentity.birthDate(date)
            let found = try await TenantContext.run(database: database, logging: logging) { context in
                let campus = try await context.campuses.require(slug: campus)
                return try await context.users.setBirthDate(campus: campus, email: email, birthDate: birthDate, actor: TenantContext.actor)
            }
            guard found else {
                throw CLIError("no member of \(campus) has the email \(email): check it, or add them with `attest user add`")
            }
            say(birthDate == nil ? "Cleared \(email)'s birth date." : "Recorded \(email)'s birth date.")
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
            let what = "the path of a UTF-8 CSV file with columns email,name[,roles]"
            guard let text = String(validating: try readFile(file, what), as: UTF8.self) else {
                throw CLIError("\(file) is not UTF-8 text; give \(what)")
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
            let (users, activity) = try await TenantContext.run(database: database, logging: logging) { context in
                let campus = try await context.campuses.require(slug: campus).id
                return (try await context.users.list(campus: campus), try await context.users.activity(campus: campus))
            }
            if json {
                return printJSONObject(users.map { user in user.jsonObject.merging(["active": activity[user.id] ?? true]) { $1 } })
            }
            for user in users {
                let status = activity[user.id] == false ? "\tdeactivated" : ""
                say("\(user.email)\t\(user.roles.map(\.rawValue).joined(separator: ","))\t\(user.displayName)\(status)")
            }
        }
    }

    struct Deactivate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Deactivate a user: no sign-in, every session revoked, no reminders, no shared link opens; counted apart from active members. Audited."
        )
        @Argument var campus: String
        @Argument var email: String
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var logging: LoggingOptions

        func run() async throws {
            let outcome = try await UserCommand.setActive(false, campus: campus, email: email, database: database, logging: logging)
            say(
                outcome.changed
                    ? "Deactivated \(email) at \(campus); \(outcome.sessionsRevoked) sessions revoked. `attest user reactivate` undoes it."
                    : "\(email) at \(campus) was deactivated already.")
        }
    }

    struct Reactivate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Reactivate a deactivated user: they may sign in again. Audited.")
        @Argument var campus: String
        @Argument var email: String
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var logging: LoggingOptions

        func run() async throws {
            let outcome = try await UserCommand.setActive(true, campus: campus, email: email, database: database, logging: logging)
            say(outcome.changed ? "Reactivated \(email) at \(campus): they may sign in again." : "\(email) at \(campus) is active already.")
        }
    }

    struct Erase: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Erase a user: every row of theirs (attestations, sessions, journal, recordings, episodes, links) is deleted, and the audit log keeps only that an erasure happened.",
            discussion:
                "It cannot be undone: pass --yes. Run it with the schema owner's database URL (the audit log is append-only for the server)."
        )
        @Argument var campus: String
        @Argument var email: String
        @Flag(help: "Erase: it cannot be undone.") var yes = false
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var logging: LoggingOptions

        func run() async throws {
            guard yes else {
                throw CLIError("erasing \(email) at \(campus) deletes every row of theirs and cannot be undone: pass --yes to do it")
            }
            let logger = logging.makeLogger(label: "attest")
            let owner = try database.ownerClient(logger: logger, maxConnections: 1)
            let outcome = try await runningService(owner) {
                let campus = try await CampusStore(client: owner).require(slug: campus)
                let memberID = try await UserStore(client: owner).memberID(campus: campus, email: email)
                let erased = try await UserStore(client: owner).erase(campus: campus, email: email, actor: TenantContext.actor)
                // Their rows went with their row; what names them without a foreign key goes too:
                // results still waiting under their email or campus id, the outbox's events.
                var forgotten: [String: Int] = [:]
                for erasure in AttestServices.memberErasures(owner) {
                    forgotten.merge(
                        try await erasure.forget(ErasedMember(id: erased.id, email: email, memberID: memberID), campus: campus),
                        uniquingKeysWith: +)
                }
                return (erased.id, erased.auditEntriesRemoved, forgotten)
            }
            let results = outcome.2["waitingResults"] ?? 0, events = outcome.2["outboxEvents"] ?? 0
            say(
                "Erased \(email) at \(campus) (user \(outcome.0)); \(outcome.1) audit entries naming them removed, one recording the erasure kept"
                    + (results > 0 ? "; \(results) unmatched test results under their email deleted" : "")
                    + (events > 0 ? "; \(events) notification events naming them deleted" : "") + "."
            )
        }
    }
}
