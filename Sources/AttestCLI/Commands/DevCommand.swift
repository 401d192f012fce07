import ArgumentParser
import AttestAPI
import AttestPlugins
import AttestPostgres
import AttestSchema
import AttestServer
import AttestWeb
import BuiltinPlugins
import Community
import Foundation
import Identity
import Logging
import Notifications
import Surveys
import Synchronization
import Tenancy

struct DevCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dev",
        abstract: "Run everything locally: a private PostgreSQL cluster, the schema, a demo campus and the server.",
        discussion: """
            The cluster lives in --data-dir (created on first run, reused after), listens only on a \
            Unix socket there, and stops with the server on Ctrl-C or SIGTERM. Its URL is written to \
            DIR/database-url and its key to DIR/kek. Other attest commands run from the same \
            directory pick both up when DIR is ./.attest (the default); for another DIR they take \
            DATABASE_URL=@DIR/database-url ATTEST_KEK_FILE=DIR/kek.
            """,
        subcommands: [Seed.self, SeedCampuses.self]
    )

    @Option(help: "Address to listen on.") var host = "127.0.0.1"
    @Option(help: "Port to listen on.") var port = 8080
    @Option(help: "Where the cluster and its data live.") var dataDir = ".attest"
    @Option(help: "Most database connections the server opens.") var dbPoolSize = 10
    @Option(
        name: .customLong("allow-outbound-host"),
        help: ArgumentHelp(
            "A host the server may reach over plain http and at private or loopback addresses (repeatable), as `serve` has it: a webhook receiver on 127.0.0.1.",
            valueName: "host"))
    var outboundHosts: [String] = []
    @OptionGroup var proxies: TrustedProxyOptions
    @OptionGroup var ownData: OwnDataLimitOptions
    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be between 0 and 65535") }
    }

    func run() async throws {
        let logger = logging.makeLogger(label: "attest.dev")
        let directory = URL(fileURLWithPath: dataDir, relativeTo: URL(fileURLWithPath: FileManager.default.currentDirectoryPath))
        let cluster = try EmbeddedPostgres(directory: directory)
        if let user = cluster.serverUser {
            say("Running as root: PostgreSQL runs as the unprivileged '\(user)' system user.")
        }
        try cluster.initializeIfNeeded(logger: logger)
        try cluster.start(logger: logger)
        do {
            try await serve(cluster: cluster, logger: logger)
        } catch {
            try? cluster.stop()
            throw error
        }
        try cluster.stop()
        let again = Self.isDefault(cluster.directory) ? "attest dev" : "attest dev --data-dir \(Self.shellWord(cluster.directory.path))"
        say("Stopped the server and PostgreSQL. Data stays in \(cluster.directory.path); run `\(again)` again to resume.")
    }

    /// The login `attest dev`'s server uses: only a member of attest_app, as in production.
    static let serverRole = "attest_server"

    private func serve(cluster: EmbeddedPostgres, logger: Logger) async throws {
        // The cluster's superuser owns the schema and is what other commands here use; the
        // server logs in as a member of attest_app that owns nothing, as `serve` requires.
        let url = cluster.connectionURL(database: "attest")
        try await createDatabaseIfMissing(cluster: cluster, name: "attest", logger: logger)
        let owner = PostgresClient(
            configuration: PostgresConfiguration(connectionString: url), options: .init(maxConnections: 1), logger: logger)
        try await withShutdown(owner) {
            _ = try await SchemaMigrator(logger: logger).migrate(owner)
            try await ServerLogin.ensureRole(Self.serverRole, owner: owner)
            try await DemoCampus.ensureCommunityData(owner: owner)
        }
        try Data((url + "\n").utf8).write(to: cluster.directory.appending(path: "database-url"))
        let kek = try Self.keyEncryptionKey(in: cluster.directory)
        var database = try DatabaseOptions.parse([])
        database.databaseURL = cluster.connectionURL(database: "attest", user: Self.serverRole)
        database.dbPoolSize = dbPoolSize
        let host = self.host
        let tokens = Mutex<[(email: String, role: Role, token: String)]>([])
        let machineTokens = Mutex<(lab: String, directory: String)>(("", ""))
        let demo = Mutex<Campus?>(nil)
        try await migrateThenServe(
            database: database, migrateURL: nil, kek: kek,
            server: ServerConfiguration(
                host: host, port: port, rateLimits: RateLimits(ownDataRequestsPerMember: ownData.limit), trustedProxies: proxies.addresses,
                outbound: .init(allowedHosts: Swift.Set(outboundHosts)),
                // The demo sign-in is offered here alone; with a fixed port the pages know their address.
                web: WebConfiguration(publicURL: port == 0 ? nil : URL(string: "http://\(host):\(port)"), demoSignIn: true)),
            logger: logger, registry: PluginSystem.registry.withDemoPlugins(),
            afterMigration: {
                let client = try database.applicationClient(logger: logger)
                let (issued, lab, directory, campus) = try await withShutdown(client) {
                    let made = (
                        try await DemoCampus.ensure(client: client, kek: kek),
                        try await DemoCampus.machineToken(client: client, role: .lab, name: "demo-lab"),
                        try await DemoCampus.machineToken(client: client, role: .provisioner, name: "demo-directory"),
                        try await CampusStore(client: client).find(slug: DemoCampus.slug)
                    )
                    // Reminders of minutes before this start are not all sent at once now: a
                    // newcomer who chooses a minute ahead sees that one arrive (once a day each).
                    if let campus = made.3 { try await Reminders(client: client, audience: .unattested).skipMissed(campus, at: Date()) }
                    return made
                }
                tokens.withLock { $0 = issued }
                machineTokens.withLock { $0 = (lab, directory) }
                demo.withLock { $0 = campus }
            },
            onServerRunning: { port in
                let base = "http://\(host):\(port)"
                say(
                    """

                    Campus Attest is running (Ctrl-C stops the server and PostgreSQL).
                      Health:       \(base)/healthz
                      Readiness:    \(base)/readyz
                    \(DemoCampus.summary(demo.withLock { $0 }, base: base, at: Date()))
                      Visitors:     \(base)/c/\(DemoCampus.slug)/visit  (host: Alice Member; the code is printed here)
                      Database:     \(url)
                                    (saved in \(cluster.directory.path)/database-url; \(Self.otherCommands(cluster.directory)))
                      Server log:   \(cluster.logFile.path)

                    Demo sign-in tokens (send as Authorization: Bearer <token>):
                    """)
                for person in tokens.withLock({ $0 }) {
                    say(
                        "  \(person.role.rawValue.padding(toLength: 15, withPad: " ", startingAt: 0)) \(person.email.padding(toLength: 28, withPad: " ", startingAt: 0)) \(person.token)"
                    )
                }
                say("")
                let machines = machineTokens.withLock { $0 }
                say("Laboratory token (POST \(base)/v1/campuses/\(DemoCampus.slug)/lab/results): \(machines.lab)")
                say("Directory token (SCIM at \(base)/scim/v2/campuses/\(DemoCampus.slug)/): \(machines.directory)")
                say("")
                say("Try: curl -H 'Authorization: Bearer <token>' \(base)/v1/campuses/\(DemoCampus.slug)/me")
                say("")
            })
    }

    /// Whether `directory` is `./.attest`, where other commands look for the cluster's URL and key.
    static func isDefault(_ directory: URL, currentDirectory: String = FileManager.default.currentDirectoryPath) -> Bool {
        directory.standardizedFileURL.path
            == URL(fileURLWithPath: ".attest", relativeTo: URL(fileURLWithPath: currentDirectory))
            .standardizedFileURL.path
    }

    /// How other attest commands reach the cluster in `directory`: by themselves from here when
    /// it is `./.attest`; else through the environment (they look only in `./.attest`).
    static func otherCommands(_ directory: URL, currentDirectory: String = FileManager.default.currentDirectoryPath) -> String {
        guard !isDefault(directory, currentDirectory: currentDirectory) else { return "other attest commands run here use it" }
        let path = directory.standardizedFileURL.path
        return "other attest commands use it with DATABASE_URL=\(shellWord("@" + path + "/database-url")) "
            + "ATTEST_KEK_FILE=\(shellWord(path + "/kek"))"
    }

    /// `text` as one shell word: as it is when it holds only characters no shell reads, else in
    /// single quotes.
    static func shellWord(_ text: String) -> String {
        let plain = text.utf8.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || "@%+,-./:=_".utf8.contains(byte)
        }
        return plain && !text.isEmpty ? text : "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    /// The dev cluster's own key-encryption key, `DIR/kek` (made on first run, readable by
    /// its owner only), as an operator keeps theirs for `serve`.
    static func keyEncryptionKey(in directory: URL) throws -> KeyEncryptionKey {
        let file = directory.appending(path: "kek")
        if let data = FileManager.default.contents(atPath: file.path) {
            guard let key = KeyEncryptionKey(text: String(decoding: data, as: UTF8.self)) else {
                throw CLIError("\(file.path) does not hold a key-encryption key: restore it, or remove the data directory to start over")
            }
            return key
        }
        let (key, text) = KeyEncryptionKey.generate()
        guard FileManager.default.createFile(atPath: file.path, contents: Data((text + "\n").utf8), attributes: [.posixPermissions: 0o600])
        else { throw CLIError("cannot write \(file.path): check that this user may write to the data directory") }
        return key
    }

    private func createDatabaseIfMissing(cluster: EmbeddedPostgres, name: String, logger: Logger) async throws {
        let admin = PostgresClient(
            configuration: PostgresConfiguration(connectionString: cluster.connectionURL(database: "postgres")),
            options: .init(maxConnections: 1), logger: logger)
        try await withShutdown(admin) {
            let rows = try await admin.query("SELECT 1 FROM pg_database WHERE datname = \(name)")
            if rows.isEmpty { try await admin.query("CREATE DATABASE \(identifier: name)") }
        }
    }
}

/// The campus `attest dev` creates: what exists of it grows with the platform.
enum DemoCampus {
    static let slug = "demo"
    static let timeZone = "America/New_York"
    static let domain = "demo.example.edu"
    /// The demo people and the role each holds beyond member.
    static let people: [(email: String, name: String, role: Role?)] = [
        ("alice@\(domain)", "Alice Member", nil),
        ("bob@\(domain)", "Bob Member", nil),
        ("admin@\(domain)", "Ada Admin", .admin),
        ("screener@\(domain)", "Sam Screener", .screener),
        ("officer@\(domain)", "Hana Health Officer", .healthOfficer),
    ]

    /// A few made-up places to get tested, around a made-up campus.
    static let demoLocations = [
        TestingLocation(
            name: "Student Health Center", address: "1 College Walk", latitude: 40.8075, longitude: -73.9626,
            hours: "Mon–Fri 8:00–17:00", phone: "+1 212 555 0100", notes: "Walk-in PCR and rapid tests"),
        TestingLocation(
            name: "Athletics Field House", address: "500 W 218th St", latitude: 40.8722, longitude: -73.9146,
            hours: "Sat–Sun 9:00–13:00", notes: "Drive-through"),
        TestingLocation(
            name: "Midtown Community Clinic", address: "200 W 40th St", latitude: 40.7549, longitude: -73.9872,
            hours: "Daily 7:00–19:00", phone: "+1 212 555 0199", url: "https://clinic.example.org"),
    ]

    /// The demo campus's made-up region: two months of a small wave of cases, ending today
    /// (with a made-up nation, `US`, and world, `WORLD`).
    static let communityRegion = CommunityRegion(id: "demo-county", name: "Demo County, Example State", population: 250_000)
    static let communitySettings: JSONValue = .object([
        "dataset": .string("demo"),
        "guidance": .object([
            "low": .object(["en": .string("Few cases around campus."), "es": .string("Pocos casos alrededor del campus.")]),
            "medium": .object(["en": .string("Stay home when you feel ill."), "es": .string("Quédese en casa si se siente mal.")]),
            "high": .object([
                "en": .string("Wear a mask indoors and get tested when you have symptoms."),
                "es": .string("Use mascarilla en interiores y hágase la prueba si tiene síntomas."),
            ]),
            "very-high": .object([
                "en": .string("Wear a mask indoors; avoid crowded events."),
                "es": .string("Use mascarilla en interiores; evite eventos concurridos."),
            ]),
            "severe": .object(["en": .string("Study remotely where you can."), "es": .string("Estudie a distancia cuando pueda.")]),
        ]),
    ])

    /// Imports the made-up `demo` dataset (as the owner) when it is missing or ends before
    /// today, so the demo's figures are always recent.
    static func ensureCommunityData(owner: PostgresClient, today: LocalDate = LocalDate(Date(), in: TimeZone(identifier: timeZone) ?? .gmt))
        async throws
    {
        let store = CommunityStore(client: owner)
        if try await store.datasets().contains(where: { $0.dataset == "demo" && $0.latest == today }) { return }
        let days = (0..<60).map { index -> CommunityDay in
            // A wave peaking three weeks ago: about 10 to 75 cases a day in 250,000 people.
            let phase = Double(index - 39) / 9
            return CommunityDay(
                date: today.adding(days: index - 59), newCases: (Int(exactly: (42 + 33 * cos(phase)).rounded()) ?? 42) + index % 3,
                newDeaths: index % 11 == 0 ? 1 : 0)
        }
        // The nation and the world, made up too: the same wave, larger and later.
        func wave(_ scale: Double, peak: Int, deaths: Double) -> [CommunityDay] {
            (0..<60).map { index in
                let phase = Double(index - peak) / 12, cases = scale * (1.4 + cos(phase))
                return CommunityDay(
                    date: today.adding(days: index - 59), newCases: Int(exactly: cases.rounded()) ?? 0,
                    newDeaths: Int(exactly: (cases * deaths).rounded()) ?? 0)
            }
        }
        _ = try await store.replace(
            dataset: "demo",
            with: CommunityDataset(series: [
                CommunitySeries(region: communityRegion, days: days),
                CommunitySeries(
                    region: CommunityRegion(id: "US", name: "United States (made up)", population: 335_000_000),
                    days: wave(40_000, peak: 45, deaths: 0.01)),
                CommunitySeries(
                    region: CommunityRegion(id: "WORLD", name: "World (made up)", population: 8_100_000_000),
                    days: wave(400_000, peak: 50, deaths: 0.008)),
            ]))
    }

    /// The lines `attest dev` prints about the demo campus: its zone and deadline as they are
    /// now (an operator may have moved them), its pages, and where reminders appear. A reminder
    /// time can be chosen up to the deadline only, so once the deadline has passed on the
    /// campus's clock they say how to open the rest of the day and watch one arrive at a minute
    /// chosen now.
    static func summary(_ campus: Campus?, base: String, at now: Date) -> String {
        guard let campus else { return "  Demo campus:  \(slug)\n  Web pages:    \(base)/c/\(slug)/" }
        let deadline = CampusFormats.clock(fromMinute: campus.deadlineMinute)
        var lines = [
            "  Demo campus:  \(slug) (\(campus.timeZone), daily deadline \(deadline))",
            "  Web pages:    \(base)/c/\(slug)/  (sign in as any demo person there)",
            "  Reminders:    printed here, as email would send them, at each member's time from now on",
            "                (\(base)/c/\(slug)/settings sets yours: a time from 00:00 to \(deadline), \(campus.timeZone) time;",
            "                choose a minute ahead to watch yours arrive)",
        ]
        if CampusSchedule.hasPassed(minute: campus.deadlineMinute, in: campus.zone, at: now) {
            lines += [
                "                The deadline has passed there today; to watch a reminder arrive at a minute you",
                "                choose now: attest campus set \(slug) deadline 23:59 (and back with \(deadline))",
            ]
        }
        return lines.joined(separator: "\n")
    }

    /// A fresh token of a demo machine at the demo campus: the laboratory (`demo-lab`) sends
    /// results, the directory (`demo-directory`) provisions over SCIM. The one an earlier start
    /// printed is revoked: each start's are the only ones that work, not a year's worth.
    static func machineToken(client: PostgresClient, role: MachineTokens.Role, name: String) async throws -> String {
        let campus = try await CampusStore(client: client).require(slug: slug)
        let tokens = MachineTokens(client: client)
        _ = try await tokens.revoke(campus: campus, role: role, name: name, actor: "attest dev")
        return try await tokens.issue(campus: campus, role: role, name: name, lifetime: nil, actor: "attest dev").token
    }

    /// Creates the campus and its people when missing, and returns a fresh session token
    /// for each person (valid for the campus's session lifetime).
    static func ensure(client: PostgresClient, kek: KeyEncryptionKey) async throws -> [(email: String, role: Role, token: String)] {
        let campuses = CampusStore(client: client)
        let users = UserStore(client: client)
        let sessions = SessionStore(client: client)
        let actor = "attest dev"
        let badgeKeys = BadgeKeyStore(client: client, kek: kek)
        var campus = try await campuses.find(slug: slug)
        if campus == nil {
            campus = try await campuses.create(
                NewCampus(slug: slug, name: "Demo University", timeZone: timeZone, deadlineMinute: 600, emailDomains: [domain]),
                actor: actor, setUp: badgeKeys.provision)
        }
        guard let campus else { return [] }
        let locations = TestingLocationStore(client: client)
        if try await locations.list(campus: campus.id).isEmpty {
            _ = try await locations.add(campus: campus, demoLocations, actor: actor)
        }
        if try await badgeKeys.keys(campus: campus.id).isEmpty { _ = try await badgeKeys.rotate(campus: campus, actor: actor) }
        let plugins = CampusPluginStore(client: client)
        if try await plugins.list(campus: campus.id, kind: .communityData).isEmpty {
            try await plugins.enable(
                campus: campus, kind: .communityData, id: PluginRegistry.importedProviderID, settings: communitySettings, actor: actor)
            if campus.communityRegion == nil {
                _ = try await campuses.set(slug: slug, key: "region", value: communityRegion.id, actor: actor)
            }
        }
        // Episodes get made-up weather and air quality (marked so): `serve` does not know this provider.
        if try await plugins.list(campus: campus.id, kind: .context).isEmpty {
            try await plugins.enable(campus: campus, kind: .context, id: MadeUpContextProvider.id, settings: .null, actor: actor)
        }
        // Reminders reach members on this terminal, printed as email would send them.
        if try await plugins.list(campus: campus.id, kind: .sink).isEmpty {
            try await plugins.enable(
                campus: campus, kind: .sink, id: MemberChannels.terminal,
                settings: try MemberChannels.prepare(id: MemberChannels.terminal, settings: .null), actor: actor)
        }
        // Visitors may register at /c/demo/visit; their codes are printed here too.
        if case .object(let settings)? = campus.settings.bytes.withUnsafeBytes({ try? JSONValue(parsing: $0) }), settings["guests"] == nil {
            _ = try await campuses.set(slug: slug, key: CampusSetting.guests.rawValue, value: "on", actor: actor)
        }
        let questionnaires = QuestionnaireStore(client: client)
        if try await questionnaires.active(campus: campus.id) == nil {
            _ = try await questionnaires.publish(campus: campus, draft: DemoQuestionnaire.draft, actor: actor)
        }
        var tokens: [(String, Role, String)] = []
        for person in people {
            let user: User
            if let found = try await users.find(campus: campus.id, email: person.email) {
                user = found
            } else {
                user = try await users.add(campus: campus, email: person.email, displayName: person.name, actor: actor)
                if let role = person.role { try await users.grant(campus: campus, email: person.email, role: role, actor: actor) }
            }
            // Printed for curl and scripts: minted, not signed in to, so they open no private data.
            let issued = try await sessions.issue(campus: campus, user: user.id, byOperator: true)
            tokens.append((person.email, person.role ?? .member, issued.token))
        }
        return tokens
    }
}
