import AttestPluginHTTP
import AttestPlugins
import AttestPostgres
import Community
import Foundation
import Hummingbird
import Identity
import Journal
import Logging
import Notifications
import Records
import ServiceLifecycle
import Surveys
import Tenancy

/// Everything the routes use, built once per server.
public struct AttestServices: Sendable {
    public var database: PostgresClient
    /// A streaming standby's pool for statistics reads (`DATABASE_READ_URL`), when there is one.
    public var readDatabase: PostgresClient?
    public var campuses: CampusDirectory
    public var users: UserStore
    public var sessions: SessionStore
    /// Each campus's sign-in generation, read every second: a `Service` the application runs.
    public var authGenerations: AuthGenerations
    public var issuers: OIDCIssuerStore
    public var idTokens: IDTokenVerifier
    /// One sign-in per ID token; the nonces of sign-ins the server starts.
    public var signIns: SignInGuard
    /// The sign-in use case (issuers, verification, one use per token, onboarding, session).
    public var signIn: SignInService
    /// The browser's sign-in with an identity provider (authorization code, PKCE).
    public var browserSignIn: BrowserSignIn
    public var questionnaires: QuestionnaireStore
    public var activeQuestionnaires: ActiveQuestionnaires
    /// The batched attestation writer: a `Service` the application runs.
    public var writer: AttestationWriter
    public var attestations: AttestationService
    public var badges: BadgeService
    /// Test results, isolations and each member's health status (Records).
    public var records: HealthRecords
    /// What each module forgets of an erased member beyond their row's cascade, run after
    /// every erasure (SCIM's here, `attest user erase` through `memberErasures(_:)`).
    public var erasures: [any MemberErasure]
    /// Machines' tokens: laboratories', the directory's provisioner's.
    public var machineTokens: MachineTokens
    /// The campus's users and groups as the university's directory pushes them (SCIM).
    public var directory: Directory
    /// Visitors' day passes (DESIGN §12).
    public var guests: GuestStore
    /// Door checks counted per door and hour, added to the table every few seconds: a `Service`.
    public var doorCounts: DoorCounts
    public var testingLocations: TestingLocationDirectory
    /// The campus's region's community figures, from its community-data provider.
    public var community: CommunityDirectory
    /// Members' private journals (sealed under the key-encryption key).
    public var journal: JournalStore
    /// Members' private health profiles (sealed like the journal).
    public var profiles: ProfileStore
    /// The regions each member follows on the community page.
    public var places: PlaceStore
    /// Members' episodes, and the weather around them from the campus's context provider.
    public var episodes: EpisodeStore
    public var episodeContext: EpisodeContext
    /// Delivers the notification outbox: a `Service` the application runs.
    public var outbox: OutboxWorker
    /// Each campus's VAPID key and its members' browser subscriptions (Web Push).
    public var pushKeys: PushKeyStore
    public var pushSubscriptions: PushSubscriptionStore
    public var statistics: StatisticsStore
    /// The statistics use cases: members' shares, the dashboard, follow-ups.
    public var statisticsService: StatisticsService
    /// The daily retention purge: a `Service` the application runs.
    public var retention: RetentionService
    /// Where people reach the pages (`https://attest.example.edu`): links in messages.
    public var origin: String
    /// The time "now" (tests set it to probe deadlines and date changes).
    public var clock: @Sendable () -> Date
    /// What `GET /metrics` shows: this server's own registry.
    public var metrics: ServerMetrics
    /// Sign-in and unknown-token rate limits (this server's own counts).
    public var limiters: RequestLimiters

    public init(
        database: PostgresClient, readDatabase: PostgresClient? = nil, configuration: ServerConfiguration,
        registry: PluginRegistry = PluginSystem.registry, kek: KeyEncryptionKey? = nil, logger: Logger,
        clock: @escaping @Sendable () -> Date = { Date() },
        metrics: ServerMetrics = ServerMetrics()
    ) {
        self.database = database
        self.readDatabase = readDatabase
        self.metrics = metrics
        self.limiters = RequestLimiters(configuration.rateLimits)
        self.campuses = CampusDirectory(store: CampusStore(client: database), ttl: configuration.campusCacheTTL)
        self.users = UserStore(client: database)
        self.authGenerations = AuthGenerations(client: database, trustedFor: configuration.generationsTrustedFor)
        self.sessions = SessionStore(client: database, generations: authGenerations)
        self.issuers = OIDCIssuerStore(client: database)
        let http = AsyncPluginHTTPClient(policy: configuration.outbound)
        self.idTokens = IDTokenVerifier(keys: JWKSCache(http: http, logger: logger))
        self.questionnaires = QuestionnaireStore(client: database)
        self.activeQuestionnaires = ActiveQuestionnaires(store: questionnaires)
        let outboxSignal = OutboxSignal()
        self.writer = AttestationWriter(
            client: database, workers: configuration.writeWorkers, logger: logger, metrics: SubmissionMetrics(factory: metrics.factory),
            outboxSignal: outboxSignal)
        self.attestations = AttestationService(
            client: database, sessions: sessions, writer: writer, questionnaires: activeQuestionnaires, registry: registry, logger: logger,
            kek: kek)
        let attestations = self.attestations
        self.badges = BadgeService(
            client: database, keys: BadgeKeyStore(client: database, kek: kek),
            decideHealth: { health, answered, campus, now in
                await attestations.decide(health: health, answered: answered, campus: campus, at: now)
            })
        self.records = HealthRecords(client: database, generations: authGenerations, kek: kek)
        self.erasures = Self.memberErasures(database)
        self.machineTokens = MachineTokens(client: database)
        self.directory = Directory(client: database)
        let subjectKeys = badges.keys
        self.guests = GuestStore(client: database, secret: { campus in try await subjectKeys.subjectKey(campus: campus) })
        self.doorCounts = DoorCounts(client: database, logger: logger, clock: clock)
        self.testingLocations = TestingLocationDirectory(
            client: database, registry: registry, http: http, logger: logger, providerBudget: configuration.communityDataBudget, kek: kek)
        self.community = CommunityDirectory(
            client: database, registry: registry, http: http, logger: logger, providerBudget: configuration.communityDataBudget, kek: kek)
        self.journal = JournalStore(client: database, kek: kek)
        self.profiles = ProfileStore(client: database, kek: kek)
        self.places = PlaceStore(client: database)
        self.episodes = EpisodeStore(client: database, kek: kek)
        self.episodeContext = EpisodeContext(client: database, registry: registry, http: http, logger: logger, kek: kek)
        let badgeKeys = badges.keys
        self.pushKeys = PushKeyStore(client: database, kek: kek)
        self.pushSubscriptions = PushSubscriptionStore(client: database, kek: kek)
        // The demo sign-in is `attest dev`'s alone: so is printing reminders on its terminal.
        var terminal: (@Sendable (String) -> Void)?
        if configuration.web.demoSignIn {
            // Written at once, unbuffered: a pipe (a test, `tee`) would otherwise hold it.
            terminal = { (text: String) in FileHandle.standardOutput.write(Data((text + "\n").utf8)) }
        }
        self.origin = configuration.web.origin ?? "http://\(configuration.host):\(configuration.port)"
        let reach = MemberReach(
            recipients: .members, unsubscribeSecret: { campus in try await badgeKeys.subjectKey(campus: campus) },
            origin: origin,
            allowedHosts: configuration.outbound.allowedHosts, terminal: terminal)
        self.outbox = OutboxWorker(
            client: database, registry: registry, http: http, logger: logger, clock: clock,
            metrics: metrics.factory, kek: kek, signal: outboxSignal, reminderAudience: .unattested, reach: reach)
        self.statistics = StatisticsStore(client: database, reader: readDatabase, now: clock)
        self.statisticsService = StatisticsService(store: statistics, questionnaires: activeQuestionnaires)
        self.retention = RetentionService(
            client: database, logger: logger, clock: clock,
            upkeeps: [
                SignInUpkeep(client: database), JournalUpkeep(client: database), RecordsUpkeep(records: records),
                GuestUpkeep(client: database), OutboxUpkeep(client: database),
            ])
        self.signIns = SignInGuard(client: database)
        self.signIn = SignInService(issuers: issuers, verifier: idTokens, guardian: signIns, users: users, sessions: sessions)
        self.browserSignIn = BrowserSignIn(issuers: issuers, guardian: signIns, signIn: signIn, http: http, kek: kek)
        self.clock = clock
    }

    /// The modules' `MemberErasure`s: the results waiting under the member's email or id
    /// (Records), the outbox's events naming them (Notifications).
    public static func memberErasures(_ client: PostgresClient) -> [any MemberErasure] {
        [RecordsErasure(records: HealthRecords(client: client)), OutboxErasure(client: client)]
    }

}
