import ArgumentParser
import AttestPlugins
import Foundation
import Identity
import Journal
import Records
import Surveys
import Tenancy

struct CampusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "campus",
        abstract: "Create, inspect and change campuses and their sign-in providers.",
        subcommands: [Create.self, List.self, Show.self, Set.self, RotateBadgeKey.self, OIDC.self, Roles.self, Erase.self]
    )
}

extension CampusCommand {
    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create a campus.")

        @Argument(help: "2–40 characters of a-z, 0-9 and '-'.") var slug: String
        @Option(help: "Display name.") var name: String
        @Option(help: "IANA time zone, e.g. America/New_York.") var timezone: String
        @Option(help: "Daily deadline, local HH:MM.") var deadline = "10:00"
        @Option(name: .customLong("email-domain"), help: "An email domain allowed to sign in (repeatable).")
        var emailDomains: [String] = []
        @Flag(help: "Print the campus as JSON.") var json = false
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var keys: KeyOptions
        @OptionGroup var logging: LoggingOptions

        func run() async throws {
            let kek = try keys.require(for: database)  // the campus's first badge key is sealed with it
            guard let minute = CampusFormats.minute(fromClock: deadline) else {
                throw CampusError.invalidTime(key: "--deadline", value: deadline)
            }
            let new = NewCampus(
                slug: slug, name: name, timeZone: timezone, deadlineMinute: minute,
                emailDomains: emailDomains.map { $0.lowercased() })
            // Checked before touching the database, so bad input never waits on a connection.
            try CampusStore.validate(new)
            let campus = try await TenantContext.run(database: database, logging: logging, sealingWith: kek) { context in
                try await context.campuses.create(
                    new, actor: TenantContext.actor, setUp: BadgeKeyStore(client: context.client, kek: kek).provision)
            }
            if json { printJSONObject(campus.jsonObject) } else { say("Created campus \(campus.slug) (\(campus.name)).") }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List campuses.")
        @Flag(help: "Print JSON.") var json = false
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var logging: LoggingOptions

        func run() async throws {
            let campuses = try await TenantContext.run(database: database, logging: logging) { try await $0.campuses.list() }
            if json { return printJSONObject(campuses.map(\.jsonObject)) }
            if campuses.isEmpty { return say("No campuses yet: create one with `attest campus create`.") }
            for campus in campuses {
                say(
                    "\(campus.slug)\t\(campus.timeZone)\tdeadline \(CampusFormats.clock(fromMinute: campus.deadlineMinute))\t\(campus.name)"
                )
            }
        }
    }

    struct Erase: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Erase a campus: its members and every row of theirs, its keys, settings, outbox and audit log. It cannot be undone.",
            discussion: """
                For a campus that closes or a pilot that ends. Pass --yes. Run it with the schema owner's database URL. \
                The campus's audit log goes with it, so the erasure is written to this command's log (a notice on \
                standard error). Servers stop finding the campus within seconds; its badges no longer verify.
                """)
        @Argument(help: "The campus slug.") var slug: String
        @Flag(help: "Erase: it cannot be undone.") var yes = false
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var logging: LoggingOptions

        func run() async throws {
            let logger = logging.makeLogger(label: "attest")
            let owner = try database.ownerClient(logger: logger, maxConnections: 1)
            let (campus, members, results) = try await runningService(owner) {
                let campus = try await CampusStore(client: owner).require(slug: slug)
                guard yes else {
                    let count = try await UserStore(client: owner).count(campus: campus.id)
                    throw CLIError(
                        "erasing \(slug) deletes its \(count) member\(count == 1 ? "" : "s") and every row of theirs, its keys and its audit log, "
                            + "and cannot be undone: pass --yes to do it")
                }
                return try await owner.withTransaction(campus: campus.id.rawValue) { connection in
                    let results = try await HealthRecords.forgetResults(connection, campus: campus.id)
                    return (campus, try await CampusStore.erase(connection, campus: campus.id), results)
                }
            }
            logger.notice(
                "campus erased",
                metadata: [
                    "campus": "\(campus.slug)", "campus_id": "\(campus.id)", "members": "\(members)", "actor": "\(TenantContext.actor)",
                ])
            say(
                "Erased campus \(campus.slug) (\(campus.id)): \(members) member\(members == 1 ? "" : "s") and every row of theirs, "
                    + "\(results) test result\(results == 1 ? "" : "s"), its keys, settings, outbox and audit log.")
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show a campus's settings.")
        @Argument var slug: String
        @Flag(help: "Print JSON.") var json = false
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var logging: LoggingOptions

        func run() async throws {
            let (campus, issuers) = try await TenantContext.run(database: database, logging: logging) { context in
                let campus = try await context.campuses.require(slug: slug)
                return (campus, try await context.issuers.list(campus: campus.id))
            }
            if json {
                var object = campus.jsonObject
                object["oidcIssuers"] = issuers.map(\.jsonObject)
                return printJSONObject(object)
            }
            campus.textLines.forEach(say)
            say("oidc-issuers:     \(issuers.isEmpty ? "(none)" : issuers.map(\.textLabel).joined(separator: ", "))")
            if campus.emailDomains.isEmpty, !issuers.contains(where: \.allowAnyDomain) {
                say("sign-in:          nobody can sign in: no email-domains, and no issuer added with --allow-any-domain")
            }
        }
    }

    struct Set: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Change one setting.",
            discussion: """
                Keys: \(CampusSetting.allCases.map(\.rawValue).joined(separator: ", ")). `settings` takes a JSON object merged into \
                the campus's settings (the others stay; a key given null is removed). Setting `timezone`, or \
                `isolationDays` in `settings`, recomputes every member's health status and says how many changed. \
                A key in `settings` a letter or two from one Campus Attest reads is refused as a typo.
                """)
        @Argument var slug: String
        @Argument var key: String
        @Argument var value: String
        @Flag(help: "Print the campus as JSON.") var json = false
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var logging: LoggingOptions

        func validate() throws {
            guard CampusSetting(rawValue: key) != nil else { throw CampusError.unknownSetting(key: key) }
        }

        func run() async throws {
            // The keys the product reads from `settings` are checked here, where every module's
            // are known; a plugin's own keys pass as they are, unless one is a near miss of the
            // product's (a typo would quietly keep the default); any key may be removed (null).
            if key == CampusSetting.settings.rawValue, case .object(let fields)? = try? JSONValue(parsing: Array(value.utf8)) {
                let problems =
                    CampusSettingsKeys.nearMisses(in: fields.filter { $0.value != .null }.keys.sorted())
                    + RecordsPolicy.problems(in: fields)
                    + MemberQuotas.problems(in: fields) + EpisodeDraft.problems(in: fields)
                if !problems.isEmpty {
                    throw CLIError("invalid settings, nothing changed: \(problems.joined(separator: "; "))")
                }
            }
            let (campus, recomputed) = try await TenantContext.run(database: database, logging: logging) { context in
                let campus = try await context.campuses.set(slug: slug, key: key, value: value, actor: TenantContext.actor)
                // A kept status read the old policy or zone: every one at the campus follows now.
                guard let setting = CampusSetting(rawValue: key), RecordsPolicy.statusesDepend(on: setting, value: value) else {
                    return (campus, nil as Int?)
                }
                do {
                    return (campus, try await HealthRecords(client: context.client).recomputeAll(campus: campus))
                } catch {
                    throw CLIError(
                        "set \(key) of \(slug), but the members' health statuses were not recomputed (\(error)): "
                            + "run the same command again to recompute them")
                }
            }
            if json {
                var object = campus.jsonObject
                if let recomputed { object["statusesChanged"] = recomputed }
                return printJSONObject(object)
            }
            say("Set \(key) of \(slug)." + (recomputed.map { " Health statuses recomputed: \($0) changed." } ?? ""))
        }
    }

    struct RotateBadgeKey: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate-badge-key",
            abstract: "Make a new badge-signing key; the old one verifies its badges until they expire.",
            discussion: """
                New badges are signed with the new key within 5 seconds on every server. The retired key stays \
                in GET …/badge-keys for two days, longer than any badge lives.
                """)
        @Argument var slug: String
        @Flag(help: "Print JSON.") var json = false
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var keys: KeyOptions
        @OptionGroup var logging: LoggingOptions

        func run() async throws {
            let kek = try keys.require(for: database)
            let (kid, retired) = try await TenantContext.run(database: database, logging: logging, sealingWith: kek) { context in
                let campus = try await context.campuses.require(slug: slug)
                return try await BadgeKeyStore(client: context.client, kek: kek).rotate(campus: campus, actor: TenantContext.actor)
            }
            if json { return printJSONObject(["kid": kid, "retired": retired]) }
            say(
                "New badge key \(kid) for \(slug)"
                    + (retired.isEmpty ? "." : "; retired \(retired.joined(separator: ", ")) (verifies for two more days)."))
        }
    }

    struct Roles: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Roles that follow directory groups: a SCIM group's displayName or externalId, or a name in the groups claim.",
            discussion: """
                attest campus roles map SLUG "Health Office" health_officer: members of the group get the role (SCIM membership \
                at once; the OIDC groups claim at their next sign-in), and lose it when they leave the group, unless an operator \
                granted it by hand. Every change is audited with its source (scim, oidc or mapping).
                """,
            subcommands: [Map.self, Unmap.self, List.self])

        struct Map: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Give a role to a directory group's members.")
            @Argument var slug: String
            @Argument(help: "The group's displayName or externalId (or a name the groups claim gives).") var group: String
            @Argument(help: "screener, health_officer or admin.") var role: String
            @OptionGroup var database: DatabaseOptions
            @OptionGroup var logging: LoggingOptions

            func run() async throws { try await Roles.change(slug, group, role, map: true, database: database, logging: logging) }
        }

        struct Unmap: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Stop a directory group giving a role.")
            @Argument var slug: String
            @Argument var group: String
            @Argument(help: "screener, health_officer or admin.") var role: String
            @OptionGroup var database: DatabaseOptions
            @OptionGroup var logging: LoggingOptions

            func run() async throws { try await Roles.change(slug, group, role, map: false, database: database, logging: logging) }
        }

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "The campus's group-to-role mappings.")
            @Argument var slug: String
            @Flag(help: "Print JSON.") var json = false
            @OptionGroup var database: DatabaseOptions
            @OptionGroup var logging: LoggingOptions

            func run() async throws {
                let mappings = try await TenantContext.run(database: database, logging: logging) { context in
                    try await Directory(client: context.client).roleMappings(campus: try await context.campuses.require(slug: slug))
                }
                if json { return printJSONObject(mappings.map { ["group": $0.group, "role": $0.role.rawValue] }) }
                if mappings.isEmpty { return say("No group gives a role at \(slug): add one with `attest campus roles map`.") }
                for mapping in mappings { say("\(mapping.group)\t\(mapping.role.rawValue)") }
            }
        }

        static func change(_ slug: String, _ group: String, _ role: String, map: Bool, database: DatabaseOptions, logging: LoggingOptions)
            async throws
        {
            guard let parsed = Role(parsing: role) else { throw IdentityError.unknownRole(role) }
            let changed = try await TenantContext.run(database: database, logging: logging) { context in
                try await Directory(client: context.client).setRoleMapping(
                    campus: try await context.campuses.require(slug: slug), group: group, role: parsed, map: map, actor: TenantContext.actor
                )
            }
            switch (map, changed) {
            case (true, true): say("Members of \(group) at \(slug) are now \(parsed.rawValue).")
            case (true, false): say("\(group) gives \(parsed.rawValue) at \(slug) already.")
            case (false, true): say("\(group) no longer gives \(parsed.rawValue) at \(slug).")
            case (false, false): say("\(group) did not give \(parsed.rawValue) at \(slug).")
            }
        }
    }

    struct OIDC: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "oidc", abstract: "The OpenID Connect issuers a campus accepts.",
            subcommands: [Add.self, List.self, Remove.self])
    }
}

extension CampusCommand.OIDC {
    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Accept ID tokens from an issuer (adding it again replaces it).",
            discussion: """
                Google: attest campus oidc add SLUG --google --audience CLIENT_ID.apps.googleusercontent.com. \
                For the web pages' sign-in, add the web client too: --client-id ID --client-secret-file FILE \
                (the secret is sealed under the key-encryption key, so --kek-file or $ATTEST_KEK_FILE is needed), \
                and register {public URL}/c/SLUG/signin/callback as its redirect URI at the provider.
                """)
        @Argument var slug: String
        @Option(help: "The issuer's exact `iss`.") var issuer: String?
        @Option(help: "An OAuth client ID tokens must be issued to (repeatable).") var audience: [String] = []
        @Option(help: "Where the issuer publishes its keys.") var jwksUrl: String?
        @Option(help: "A file holding the issuer's keys (JWKS).") var jwksFile: String?
        @Flag(help: "Google Sign-In: issuer and key URL preset.") var google = false
        @Flag(
            help: """
                Admit this issuer's accounts of any email domain while the campus lists none (email-domains). \
                Without it, a campus with no email domains admits nobody.
                """)
        var allowAnyDomain = false
        @Option(help: "The web sign-in's OAuth client ID (joins the audiences).") var clientId: String?
        @Option(
            help: ArgumentHelp(
                "A file holding the web client's secret (never the secret itself on the command line); - reads standard input.",
                valueName: "file"))
        var clientSecretFile: String?
        @Option(help: "What the sign-in button names, e.g. \"University account\" (default: the issuer's host; Google: Google).") var label:
            String?
        @Flag(help: "Print JSON.") var json = false
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var keys: KeyOptions
        @OptionGroup var logging: LoggingOptions

        func validate() throws {
            guard (clientId == nil) == (clientSecretFile == nil) else {
                throw ValidationError("give --client-id and --client-secret-file together (the web sign-in needs both), or neither")
            }
            if let label, !(1...100).contains(label.count) { throw ValidationError("--label must be 1 to 100 characters") }
            if google {
                guard issuer == nil, jwksUrl == nil, jwksFile == nil else {
                    throw ValidationError("--google sets the issuer and keys itself; give only --audience with it")
                }
            } else {
                guard issuer != nil else { throw ValidationError("give --issuer URL (or --google)") }
                guard (jwksUrl == nil) != (jwksFile == nil) else { throw ValidationError("give exactly one of --jwks-url and --jwks-file") }
            }
            guard !audience.isEmpty || clientId != nil else { throw ValidationError("give at least one --audience (the OAuth client ID)") }
        }

        func run() async throws {
            var entry: OIDCIssuer
            if google {
                entry = .google(audiences: audience, allowAnyDomain: allowAnyDomain)
            } else {
                var inline: String?
                if let jwksFile {
                    let what = "the path of the issuer's JSON Web Key Set (a JSON file, UTF-8)"
                    guard let text = String(validating: try readTextFile(jwksFile, what, option: "--jwks-file"), as: UTF8.self) else {
                        throw CLIError("--jwks-file \(jwksFile) is not UTF-8 text; give \(what)")
                    }
                    inline = text
                }
                guard let issuer else { throw ValidationError("give --issuer URL (or --google)") }
                entry = OIDCIssuer(issuer: issuer, audiences: audience, jwksURL: jwksUrl, jwks: inline, allowAnyDomain: allowAnyDomain)
            }
            if let label { entry.label = label }
            entry.clientID = clientId
            let secret = try clientSecretFile.map { try Secret.read("@" + $0, option: "--client-secret-file") }
            let kek = secret == nil ? nil : try keys.require(for: database)
            try await TenantContext.run(database: database, logging: logging, sealingWith: kek) { context in
                let campus = try await context.campuses.require(slug: slug)
                try await context.issuers.add(campus: campus, entry, actor: TenantContext.actor, clientSecret: secret, kek: kek)
            }
            if let clientId, !entry.audiences.contains(clientId) { entry.audiences.append(clientId) }
            if json { printJSONObject(entry.jsonObject) } else { say("\(slug) now accepts ID tokens from \(entry.issuer).") }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List a campus's issuers.")
        @Argument var slug: String
        @Flag(help: "Print JSON.") var json = false
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var logging: LoggingOptions

        func run() async throws {
            let issuers = try await TenantContext.run(database: database, logging: logging) { context in
                try await context.issuers.list(campus: try await context.campuses.require(slug: slug).id)
            }
            if json { return printJSONObject(issuers.map(\.jsonObject)) }
            if issuers.isEmpty { return say("\(slug) accepts no issuer yet: add one with `attest campus oidc add`.") }
            for issuer in issuers {
                say(
                    "\(issuer.issuer)\taudiences \(issuer.audiences.joined(separator: ","))\tkeys \(issuer.jwksURL ?? "inline")"
                        + (issuer.allowAnyDomain ? "\tany email domain" : "")
                        + (issuer.offersWebSignIn ? "\tweb sign-in \"\(issuer.displayName)\" (client \(issuer.clientID ?? ""))" : ""))
            }
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Stop accepting an issuer.")
        @Argument var slug: String
        @Option(help: "The issuer to remove.") var issuer: String
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var logging: LoggingOptions

        func run() async throws {
            try await TenantContext.run(database: database, logging: logging) { context in
                let campus = try await context.campuses.require(slug: slug)
                try await context.issuers.remove(campus: campus, issuer: issuer, actor: TenantContext.actor)
            }
            say("\(slug) no longer accepts \(issuer).")
        }
    }
}

extension OIDCIssuer {
    var jsonObject: [String: Any] {
        [
            "issuer": issuer, "audiences": audiences, "jwksUrl": jwksURL ?? NSNull(), "inlineKeys": jwks != nil,
            "allowAnyDomain": allowAnyDomain,
            "label": displayName, "webClientId": clientID ?? NSNull(), "webSignIn": offersWebSignIn || (clientID != nil),
        ]
    }

    /// How `campus show` names it.
    var textLabel: String { allowAnyDomain ? "\(issuer) (any email domain)" : issuer }
}

/// The keys of a campus's `settings` that Campus Attest's own modules read, and the settings
/// set with keys of their own: a key given in `settings` that is one or two letters (or a
/// letter case) away from one of them is a typo that would quietly change nothing.
enum CampusSettingsKeys {
    static var read: [String] { RecordsPolicy.settingKeys + MemberQuotas.settingKeys + EpisodeDraft.settingKeys }

    /// "key: what it must be" for each key of `keys` that is not one the product reads but
    /// lies near one (or near a setting of its own key).
    static func nearMisses(in keys: [String]) -> [String] {
        let own = CampusSetting.allCases.map(\.rawValue).filter { $0 != CampusSetting.settings.rawValue }
        let known = Set(read + own)
        return keys.filter { !known.contains($0) }.compactMap { key in
            let folded = Array(key.lowercased().unicodeScalars)
            if let near = read.first(where: { isNear(folded, $0) }) {
                return "\(key): not a key Campus Attest reads; did you mean \"\(near)\"?"
            }
            if let near = own.first(where: { isNear(folded, $0) }) {
                return
                    "\(key): not a key Campus Attest reads in settings; did you mean the setting \(near) (attest campus set <slug> \(near) <value>)?"
            }
            return nil
        }
    }

    /// Whether `key` (lowercased scalars) is at most two edits from `known` (a key of eight or
    /// more letters; one edit for shorter ones), letter case aside.
    static func isNear(_ key: [Unicode.Scalar], _ known: String) -> Bool {
        let target = Array(known.lowercased().unicodeScalars)
        let limit = target.count >= 8 ? 2 : 1
        guard abs(key.count - target.count) <= limit else { return false }
        // Levenshtein distance, one row at a time.
        var previous = Array(0...target.count)
        for (i, a) in key.enumerated() {
            var current = [i + 1] + Array(repeating: 0, count: target.count)
            for (j, b) in target.enumerated() {
                current[j + 1] = min(previous[j + 1] + 1, current[j] + 1, previous[j] + (a == b ? 0 : 1))
            }
            previous = current
        }
        return previous[target.count] <= limit
    }
}
