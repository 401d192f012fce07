import ArgumentParser
import AttestPlugins
import Foundation
import Identity
import Tenancy

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
                    campus: campus, user: user.id, lifetime: lifetime, audit: (TenantContext.actor, user.email), byOperator: true
                ).token
            }
            say(token)
        }
    }
}
