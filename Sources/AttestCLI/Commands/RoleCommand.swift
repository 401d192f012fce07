import ArgumentParser
import AttestPlugins
import Foundation
import Identity
import Tenancy

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
