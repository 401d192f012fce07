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

struct RoleCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "role", abstract: "Grant, revoke and list roles (recorded in the audit log).",
        discussion: "Roles: screener, health_officer, admin. Everyone is a member.",
        subcommands: [Grant.self, Revoke.self, List.self])

    struct Change: ParsableArguments {
        @Argument var campus: String
        @Argument var email: String
        @Argument(help: "screener, health_officer or admin.") var role: String

        func validate() throws {
            guard let parsed = Role(parsing: role) else { throw IdentityError.unknownRole(role) }
            guard parsed != .member else { throw IdentityError.memberRoleIsPermanent }
        }

        /// Grants or revokes, then says what changed.
        func apply(grant: Bool, database: DatabaseOptions, logging: LoggingOptions) async throws {
            guard let role = Role(parsing: role) else { throw IdentityError.unknownRole(role) }
            let changed = try await TenantContext.run(database: database, logging: logging) { context in
                let campus = try await context.campuses.require(slug: campus)
                return grant
                    ? try await context.users.grant(campus: campus, email: email, role: role, actor: TenantContext.actor)
                    : try await context.users.revoke(campus: campus, email: email, role: role, actor: TenantContext.actor)
            }
            switch (grant, changed) {
            case (true, true): say("Granted \(role.rawValue) to \(email).")
            case (true, false): say("\(email) already has \(role.rawValue).")
            case (false, true): say("Revoked \(role.rawValue) from \(email).")
            case (false, false): say("\(email) did not have \(role.rawValue).")
            }
        }
    }
}

extension RoleCommand {
    struct Grant: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Grant a role.")
        @OptionGroup var change: Change
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var logging: LoggingOptions

        func run() async throws { try await change.apply(grant: true, database: database, logging: logging) }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Revoke a role.")
        @OptionGroup var change: Change
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var logging: LoggingOptions

        func run() async throws { try await change.apply(grant: false, database: database, logging: logging) }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List who holds roles beyond member.")
        @Argument var campus: String
        @Flag(help: "Print JSON.") var json = false
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var logging: LoggingOptions

        func run() async throws {
            let users = try await TenantContext.run(database: database, logging: logging) { context in
                try await context.users.list(campus: try await context.campuses.require(slug: campus).id)
            }
            let holders = users.filter { $0.roles.contains { $0 != .member } }
            if json {
                return printJSONObject(holders.map { ["email": $0.email, "roles": $0.roles.filter { $0 != .member }.map(\.rawValue)] })
            }
            if holders.isEmpty { return say("No roles beyond member at \(campus).") }
            for user in holders { say("\(user.email)\t\(user.roles.filter { $0 != .member }.map(\.rawValue).joined(separator: ","))") }
        }
    }
}

struct TokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token", abstract: "Mint session tokens (tests, benchmarks, kiosks).", subcommands: [Issue.self])

    struct Issue: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Issue a session token for a user; prints the token alone on stdout. Audited.")
        @Argument var campus: String
        @Argument var email: String
        @Option(help: "Lifetime, e.g. 90m, 12h, 30d. Default: the campus's session lifetime.") var ttl: String?
        @Flag(help: "Create the user (as a member) when missing.") var create = false
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var logging: LoggingOptions

        func validate() throws {
            if let ttl, CampusFormats.seconds(fromDuration: ttl) == nil { throw IdentityError.invalidTTL(ttl) }
        }

        func run() async throws {
            let lifetime = ttl.flatMap(CampusFormats.seconds(fromDuration:))
            let token = try await TenantContext.run(database: database, logging: logging) { context in
                let campus = try await context.campuses.require(slug: campus)
                var user = try await context.users.find(campus: campus.id, email: email)
                if user == nil, create {
                    user = try await context.users.add(campus: campus, email: email, displayName: "", actor: TenantContext.actor)
                }
                guard let user else {
                    throw CLIError("no user \(email) at \(campus.slug): add them with `attest user add`, or pass --create")
                }
                return try await context.sessions.issue(
                    campus: campus, user: user.id, lifetime: lifetime, audit: (TenantContext.actor, user.email)
                ).token
            }
            say(token)
        }
    }
}

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
            return printJSONObject(entries.map {
                ["id": $0.id, "at": $0.at.ISO8601Format(), "actor": $0.actor, "action": $0.action, "target": $0.target, "details": $0.details]
                    as [String: Any]
            })
        }
        for entry in entries {
            let details = entry.details.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            say("\(entry.at.ISO8601Format())\t\(entry.actor)\t\(entry.action)\t\(entry.target)\t\(details)")
        }
    }
}
