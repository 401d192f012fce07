import ArgumentParser
import AttestPlugins
import Foundation
import Identity
import Tenancy

struct TokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token", abstract: "Mint session tokens (tests, benchmarks, kiosks) and machines' tokens; list and revoke machines'.",
        subcommands: [Issue.self, List.self, Revoke.self])

    struct Issue: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Issue a session token for a user, or a machine's token; prints the token alone on stdout. Audited.",
            discussion: """
                `attest token issue <campus> <email>` signs a user in (tests, benchmarks, kiosks). \
                `attest token issue <campus> --lab <name>` makes a laboratory's token: it sends results \
                (POST /v1/campuses/<campus>/lab/results) and can read nothing. \
                `attest token issue <campus> --provisioner <name>` makes the university directory's token for the SCIM \
                service at /scim/v2/campuses/<campus>/ and nothing else. A machine's token lives a year unless --ttl says otherwise.
                """)
        @Argument var campus: String
        @Argument var email: String?
        @Option(help: "Issue a laboratory's token for this name instead of a user's session.") var lab: String?
        @Option(help: "Issue the directory's SCIM token (a provisioner) for this name instead of a user's session.") var provisioner:
            String?
        @Option(help: "Lifetime, e.g. 90m, 12h, 30d. Default: the campus's session lifetime (a year for --lab).") var ttl: String?
        @Flag(help: "Create the user (as a member) when missing.") var create = false
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var logging: LoggingOptions

        func validate() throws {
            if let ttl, CampusFormats.seconds(fromDuration: ttl) == nil { throw IdentityError.invalidTTL(ttl) }
            switch [email, lab, provisioner].compactMap({ $0 }).count {
            case 0:
                throw ValidationError(
                    "Name the user's email, or --lab <name> for a laboratory's token, or --provisioner <name> for the directory's.")
            case 1: break
            default: throw ValidationError("Give one of the user's email, --lab <name> and --provisioner <name>.")
            }
            if let machine = machine {
                if create { throw ValidationError("--create makes a user; a machine's token has none.") }
                let name = machine.name.trimmingCharacters(in: .whitespaces)
                guard (1...100).contains(name.utf8.count),
                    !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
                else {
                    let (what, example) = machine.role == .lab ? ("laboratory", "state-lab") : ("directory", "entra-id")
                    throw ValidationError(
                        "--\(machine.role.rawValue) names the \(what): 1 to 100 bytes without control characters, e.g. --\(machine.role.rawValue) \(example)."
                    )
                }
            }
        }

        /// The machine a `--lab` or `--provisioner` names.
        var machine: (role: MachineTokens.Role, name: String)? {
            if let lab { return (.lab, lab) }
            if let provisioner { return (.provisioner, provisioner) }
            return nil
        }

        func run() async throws {
            let lifetime = ttl.flatMap(CampusFormats.seconds(fromDuration:))
            if let machine {
                let token = try await TenantContext.run(database: database, logging: logging) { context in
                    let campus = try await context.campuses.require(slug: campus)
                    return try await MachineTokens(client: context.client).issue(
                        campus: campus, role: machine.role, name: machine.name, lifetime: lifetime, actor: TenantContext.actor
                    ).token
                }
                return say(token)
            }
            guard let email else { return }
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

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "A campus's machine tokens (laboratories', the directory's): live ones and those ended in the last 30 days.",
            discussion: "Never the tokens themselves: only their SHA-256 is kept. Members' sessions end with `attest user deactivate`.")
        @Argument(help: "The campus slug.") var campus: String
        @Flag(help: "Print the tokens as JSON.") var json = false
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var logging: LoggingOptions

        func run() async throws {
            let issued = try await TenantContext.run(database: database, logging: logging) { context in
                try await MachineTokens(client: context.client).list(campus: try await context.campuses.require(slug: campus))
            }
            if json { return printJSON(issued) }
            guard !issued.isEmpty else {
                return say(
                    "\(campus) has no machine tokens: `attest token issue \(campus) --lab <name>` or `--provisioner <name>` makes one.")
            }
            let now = Date()
            for token in issued {
                let state =
                    if let revoked = token.revokedAt { "revoked \(revoked.formatted(.iso8601))" } else if token.expiresAt <= now {
                        "expired \(token.expiresAt.formatted(.iso8601))"
                    } else { "live until \(token.expiresAt.formatted(.iso8601))" }
                say("--\(token.role) \(token.name): issued \(token.issuedAt.formatted(.iso8601)), \(state)")
            }
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Revoke every live token of a laboratory or of the directory: refused from the next request. Audited.",
            discussion: "Issue the machine a new token with `attest token issue <campus> --lab <name>` (or --provisioner).")
        @Argument(help: "The campus slug.") var campus: String
        @Option(help: "The laboratory whose tokens to revoke.") var lab: String?
        @Option(help: "The directory (provisioner) whose tokens to revoke.") var provisioner: String?
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var logging: LoggingOptions

        func validate() throws {
            guard (lab == nil) != (provisioner == nil) else {
                throw ValidationError("Name one machine: --lab <name> or --provisioner <name> (`attest token list <campus>` shows them).")
            }
        }

        func run() async throws {
            let (role, name): (MachineTokens.Role, String) = if let lab { (.lab, lab) } else { (.provisioner, provisioner ?? "") }
            let count = try await TenantContext.run(database: database, logging: logging) { context in
                let found = try await context.campuses.require(slug: campus)
                return try await MachineTokens(client: context.client).revoke(
                    campus: found, role: role, name: name.trimmingCharacters(in: .whitespaces), actor: TenantContext.actor)
            }
            guard count > 0 else {
                throw CLIError(
                    "\(campus) has no live token for --\(role.rawValue) \(name): `attest token list \(campus)` shows the machines' tokens")
            }
            say(
                "Revoked \(count) token\(count == 1 ? "" : "s") of --\(role.rawValue) \(name) at \(campus): refused from the next request. "
                    + "`attest token issue \(campus) --\(role.rawValue) \(name)` makes a new one.")
        }
    }
}
