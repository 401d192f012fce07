import AttestFoundation
import AttestPlugins
import AttestPostgres
import Crypto
import Foundation
import Logging
import Synchronization
import Tenancy

/// The sinks the platform serves itself to reach members (DESIGN.md §10): a campus enables
/// them as any sink (`attest plugin enable <campus> sink email --settings FILE`), and the outbox
/// worker builds them with what they need of the platform (`MemberReach`). Each takes
/// `reminder.due` events and sends the member the event names, on the channel the member has
/// on, in their language, with a one-click unsubscribe.
///
/// - `email`: SMTP submission (`SMTPClient`), DKIM-signed when the settings say how.
/// - `terminal`: prints each message as `email` would send it (headers, text, links) to the
///   server's standard output: `attest dev`'s channel, so a newcomer sees reminders without a
///   mail server. Never on a deployment that did not enable it.
public enum MemberChannels {
    public static let email = "email"
    public static let terminal = "terminal"
    public static let webPush = "web-push"
    public static let ids = PluginRegistry.memberChannelIDs
    /// The events the channels send: a member is reminded, a host told their guest arrived;
    /// the others are for campus systems.
    public static let events: [NotificationEvent] = [.reminderDue, .guestArrived]

    /// The members each channel's settings take.
    static let settingNames: [String: [String]] = [
        email: [
            "host", "port", "security", "username", "password", "from", "replyTo", "dkim", "timeoutSeconds", "maxConnections",
            "trustRootsFile", "events",
        ],
        webPush: ["subject", "ttlSeconds", "urgency", "events"],
        terminal: ["events"],
    ]

    /// The settings as they are given (`attest plugin enable`), as they are stored:
    /// `dkim.privateKeyFile` read once into `dkim.privateKey` (a secret, stored sealed),
    /// `events` set to `["reminder.due", "guest.arrived"]` when absent; checked, and a member
    /// the channel does not take refused.
    public static func prepare(id: String, settings: JSONValue) throws(PluginSettingsError) -> JSONValue {
        guard case .object(var members) = settings == .null ? .object([:]) : settings else {
            throw PluginSettingsError("the settings must be a JSON object")
        }
        // A misspelt member ("replyto") is refused by name, not passed over.
        var unknown = PluginRegistry.unknownMembers(of: settings, allowed: settingNames[id] ?? ["events"])
        if id == email {
            unknown += PluginRegistry.unknownMembers(
                of: members["dkim"], allowed: ["domain", "selector", "algorithm", "privateKeyFile", "privateKey"], at: "dkim")
        }
        guard unknown.isEmpty else { throw PluginSettingsError(unknown.joined(separator: "; ")) }
        if members["events"] == nil { members["events"] = .array(events.map { .string($0.rawValue) }) }
        if id == email, case .object(var dkim)? = members["dkim"], case .string(let path)? = dkim["privateKeyFile"] {
            guard let pem = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw PluginSettingsError("dkim.privateKeyFile: cannot read \(path): give the PEM file of the DKIM private key")
            }
            dkim["privateKeyFile"] = nil
            dkim["privateKey"] = .string(pem)
            members["dkim"] = .object(dkim)
        }
        let prepared = JSONValue.object(members)
        try validate(id: id, settings: prepared)
        return prepared
    }

    /// Checks a channel's settings as stored; throws naming the setting and what is wrong.
    public static func validate(id: String, settings: JSONValue) throws(PluginSettingsError) {
        if case .array(let names)? = settings["events"] {
            for name in names where !events.contains(where: { name == .string($0.rawValue) }) {
                throw PluginSettingsError(
                    "events: the \(id) channel sends reminder.due and guest.arrived only; leave events out or give some of [\"reminder.due\", \"guest.arrived\"]"
                )
            }
        }
        switch id {
        case email: _ = try EmailSettings(settings)
        case webPush: _ = try WebPushSettings(settings)
        case terminal: break
        default: throw PluginSettingsError("no member channel \"\(id)\": available are \(ids.joined(separator: ", "))")
        }
    }
}

/// The `email` channel's settings: `{"host", "port", "security": "starttls"|"tls"|"none",
/// "username", "password", "from", "replyTo", "dkim": {"domain", "selector", "algorithm",
/// "privateKeyFile"}, "trustRootsFile", "timeoutSeconds", "maxConnections"}`.
public struct EmailSettings: Sendable {
    public var server: SMTPServer
    public var from: MailAddress
    public var replyTo: MailAddress?
    public var dkim: DKIMSigner?

    public init(_ settings: JSONValue) throws(PluginSettingsError) {
        guard case .string(let host)? = settings["host"], !host.isEmpty, host.utf8.count <= 253,
            host.unicodeScalars.allSatisfy({ $0.isASCII && $0.value > 0x20 && $0 != "/" && $0 != "@" })
        else { throw PluginSettingsError("host is required: the SMTP relay's name, such as smtp.example.edu") }
        var security = SMTPSecurity.starttls
        if let value = settings["security"] {
            guard case .string(let text) = value, let parsed = SMTPSecurity(rawValue: text) else {
                throw PluginSettingsError("security must be starttls (port 587), tls (port 465) or none (a relay allowed by name)")
            }
            security = parsed
        }
        var port = security == .tls ? 465 : security == .starttls ? 587 : 25
        if let value = settings["port"] {
            guard case .number(let number) = value, let exact = Int(exactly: number), (1...65_535).contains(exact) else {
                throw PluginSettingsError("port must be a whole number from 1 to 65535, such as 587")
            }
            port = exact
        }
        var username: String?, password: String?
        if let value = settings["username"] {
            guard case .string(let text) = value, !text.isEmpty, !text.contains("\u{0}") else {
                throw PluginSettingsError("username must be a non-empty text")
            }
            username = text
            guard case .string(let secret)? = settings["password"], !secret.contains("\u{0}") else {
                throw PluginSettingsError("password is required with username")
            }
            password = secret
        }
        var timeout = Duration.seconds(30)
        if let value = settings["timeoutSeconds"] {
            guard case .number(let seconds) = value, let whole = Int(exactly: seconds), (1...300).contains(whole) else {
                throw PluginSettingsError("timeoutSeconds must be a whole number from 1 to 300")
            }
            timeout = .seconds(whole)
        }
        var connections = 4
        if let value = settings["maxConnections"] {
            guard case .number(let number) = value, let whole = Int(exactly: number), (1...32).contains(whole) else {
                throw PluginSettingsError("maxConnections must be a whole number from 1 to 32")
            }
            connections = whole
        }
        var trustRoots: String?
        if let value = settings["trustRootsFile"] {
            guard case .string(let path) = value, path.hasPrefix("/") else {
                throw PluginSettingsError("trustRootsFile must be the absolute path of a PEM file of certificates to trust")
            }
            trustRoots = path
        }
        server = SMTPServer(
            host: host, port: port, security: security, username: username, password: password, trustRootsFile: trustRoots,
            stepTimeout: timeout, maxConnections: connections)
        guard case .string(let fromText)? = settings["from"], let from = Self.address(fromText) else {
            throw PluginSettingsError("from is required: the sender, such as \"Campus Attest <attest@example.edu>\" or attest@example.edu")
        }
        self.from = from
        if let value = settings["replyTo"] {
            guard case .string(let text) = value, let address = Self.address(text) else {
                throw PluginSettingsError("replyTo must be an address, such as health@example.edu")
            }
            replyTo = address
        }
        if let value = settings["dkim"] {
            guard case .string(let domain)? = value["domain"], MailAddress.isValid("x@" + domain),
                case .string(let selector)? = value["selector"], !selector.isEmpty,
                selector.unicodeScalars.allSatisfy({
                    $0.isASCII && ($0.properties.isAlphabetic || $0.properties.numericType != nil || $0 == "-" || $0 == ".")
                })
            else {
                throw PluginSettingsError(
                    "dkim needs domain (example.edu) and selector (attest2026): the DNS name <selector>._domainkey.<domain> holds the public key"
                )
            }
            guard case .string(let pem)? = value["privateKey"] else {
                throw PluginSettingsError(
                    "dkim.privateKeyFile is required: the PEM file of the private key, read once when the sink is enabled")
            }
            var algorithm = "ed25519-sha256"
            if case .string(let text)? = value["algorithm"] { algorithm = text }
            do { dkim = DKIMSigner(domain: domain, selector: selector, key: try DKIMSigner.key(pem: pem, algorithm: algorithm)) } catch {
                throw PluginSettingsError("dkim: \(error)")
            }
        }
    }

    /// `Name <address>`, `"Name" <address>` or a bare address.
    static func address(_ text: String) -> MailAddress? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.hasSuffix(">"), let open = trimmed.lastIndex(of: "<") {
            let address = String(trimmed[trimmed.index(after: open)..<trimmed.index(before: trimmed.endIndex)])
            var name = trimmed[..<open].trimmingCharacters(in: .whitespaces)
            if name.hasPrefix("\""), name.hasSuffix("\""), name.count >= 2 { name = String(name.dropFirst().dropLast()) }
            return MailAddress.isValid(address) ? MailAddress(name: name, address: address) : nil
        }
        return MailAddress.isValid(trimmed) ? MailAddress(address: trimmed) : nil
    }
}

/// Who members are, as the channels address them: read through a `SELECT` the composition root
/// gives (Notifications does not own `users` nor `attestations`), a row for each of the
/// members given who is there to hear, with columns `user_id`, `email`, `display_name`, and
/// `attested` (whether the member has attested on the day given). The channels ask for the
/// members of the events they are delivering at once together.
public struct RecipientDirectory: Sendable {
    public let select: @Sendable (_ campus: CampusID, _ users: [UserID], _ date: LocalDate) -> SQL
    /// A `SELECT` of one column, `name`: the name a guest gave for a visit (`guest.arrived`).
    public let guestName: @Sendable (_ campus: CampusID, _ visit: UUID) -> SQL

    public init(
        select: @escaping @Sendable (CampusID, [UserID], LocalDate) -> SQL,
        guestName: @escaping @Sendable (CampusID, UUID) -> SQL = { _, _ in "SELECT NULL::text AS name" }
    ) {
        (self.select, self.guestName) = (select, guestName)
    }
}

/// What the member channels need from the rest of the platform, given by the composition root.
public struct MemberReach: Sendable {
    public var recipients: RecipientDirectory
    /// The campus's secret the unsubscribe tokens are derived from (`UnsubscribeTokens`).
    public var unsubscribeSecret: @Sendable (CampusID) async throws -> SymmetricKey
    /// The pages' public origin (`https://attest.example.edu`): the links' base.
    public var origin: String
    /// Hosts the operator allowed by name (`--allow-outbound-host`): plain SMTP only to them.
    public var allowedHosts: Set<String>
    /// Where the `terminal` channel prints, or nil where it must not: it prints members'
    /// addresses and unsubscribe links, which a server's output never holds (`attest dev`'s
    /// alone passes standard output).
    public var terminal: (@Sendable (String) -> Void)?

    public init(
        recipients: RecipientDirectory, unsubscribeSecret: @escaping @Sendable (CampusID) async throws -> SymmetricKey, origin: String,
        allowedHosts: Set<String> = [], terminal: (@Sendable (String) -> Void)? = nil
    ) {
        (self.recipients, self.unsubscribeSecret, self.origin, self.allowedHosts) = (recipients, unsubscribeSecret, origin, allowedHosts)
        self.terminal = terminal
    }
}

/// The SMTP clients of every campus's `email` channel, one per relay and its settings, so a
/// sink rebuilt when its settings are read again keeps its pool.
final class SMTPClients: Sendable {
    private let clients = Mutex<[SMTPServer: SMTPClient]>([:])
    let allowedHosts: Set<String>

    init(allowedHosts: Set<String>) { self.allowedHosts = allowedHosts }

    func client(for server: SMTPServer, clientName: String) throws(SMTPFailure) -> SMTPClient {
        if let client = clients.withLock({ $0[server] }) { return client }
        let made = try SMTPClient(server: server, allowedHosts: allowedHosts, clientName: clientName)
        return clients.withLock { clients in
            if let existing = clients[server] { return existing }
            clients[server] = made
            return made
        }
    }

    func shutdown() async {
        let all = clients.withLock { clients in
            defer { clients = [:] }
            return Array(clients.values)
        }
        for client in all { await client.shutdown() }
    }
}

/// A member reminder as each channel words it.
struct MemberMessage: Sendable {
    var to: MailAddress
    var language: String
    var subject: String
    var text: String
    var html: String
    var unsubscribe: String
    /// Today's survey: where a push notification's click goes.
    var survey: String
    /// The text of a push notification (its title is `subject`).
    var shortText: String

    static func reminder(
        campus: Campus, name: String, address: String, language: String, origin: String, unsubscribeToken: String
    ) -> MemberMessage {
        let base = "\(origin)/c/\(campus.slug)"
        let survey = base + "/", settings = base + "/settings"
        let unsubscribe = "\(origin)/v1/campuses/\(campus.slug)/unsubscribe?token=\(unsubscribeToken)"
        let texts = ReminderTexts.of(language)
        let greetingName = MailMessage.oneLine(name)
        func fill(_ template: String, html: Bool) -> String { Self.fill(template, campus: campus.name, name: greetingName, html: html) }
        let greeting = greetingName.isEmpty ? texts.hello : texts.greeting
        let text = [
            fill(greeting, html: false), "", fill(texts.body, html: false), survey, "",
            fill(texts.why, html: false) + " " + settings, texts.stop + " " + unsubscribe,
        ].joined(separator: "\n")
        let link = { (href: String, label: String) in "<a href=\"\(HTMLText.escape(href))\">\(HTMLText.escape(label))</a>" }
        let html = """
            <!doctype html><html lang="\(language)"><head><meta charset="utf-8"><title>\(HTMLText.escape(fill(texts.subject, html: false)))</title></head><body>
            <p>\(fill(greeting, html: true))</p>
            <p>\(fill(texts.body, html: true)) \(link(survey, texts.open))</p>
            <p><small>\(fill(texts.why, html: true)) \(link(settings, texts.settings)). \(link(unsubscribe, texts.stop))</small></p>
            </body></html>
            """
        return MemberMessage(
            to: MailAddress(name: name, address: address), language: language, subject: fill(texts.subject, html: false), text: text,
            html: html, unsubscribe: unsubscribe, survey: survey, shortText: fill(texts.body, html: false))
    }

    /// `template` with `{campus}` and `{name}` filled in one pass (a name holding "{campus}"
    /// stays as written), HTML-escaped for `html`.
    static func fill(_ template: String, campus: String, name: String, html: Bool) -> String {
        template.filled(["campus": html ? HTMLText.escape(campus) : campus, "name": html ? HTMLText.escape(name) : name])
    }

    func mail(from: MailAddress, replyTo: MailAddress?, now: Date) -> MailMessage {
        let domain = from.address.split(separator: "@").last.map(String.init) ?? "attest.invalid"
        return MailMessage(
            from: from, to: to, replyTo: replyTo, subject: subject, text: text, html: html,
            // A guest's code is no list: it has no unsubscribe (`unsubscribe` empty).
            extraHeaders: (unsubscribe.isEmpty
                ? [] : [("List-Unsubscribe", "<\(unsubscribe)>"), ("List-Unsubscribe-Post", "List-Unsubscribe=One-Click")])
                + [("Content-Language", language), ("Auto-Submitted", "auto-generated")],
            messageID: MailMessage.newMessageID(domain: domain), date: now)
    }
}

/// The reminder's words per language (the member's, else English).
struct ReminderTexts: Wording {
    var subject, greeting, hello, body, open, why, settings, stop: String

    static let english = ReminderTexts(
        subject: "Reminder: today's health check at {campus}", greeting: "Hello {name},", hello: "Hello,",
        body: "You have not answered today's health check at {campus} yet. It takes a minute:", open: "Answer today's check",
        why: "You get this reminder because email reminders are on in your settings:", settings: "settings",
        stop: "To stop email reminders with one click:")
    static let spanish = ReminderTexts(
        subject: "Recordatorio: el control de salud de hoy en {campus}", greeting: "Hola, {name}:", hello: "Hola:",
        body: "Todavía no ha respondido el control de salud de hoy en {campus}. Lleva un minuto:", open: "Responder el control de hoy",
        why: "Recibe este recordatorio porque los recordatorios por correo están activados en su configuración:",
        settings: "configuración", stop: "Para dejar de recibir recordatorios por correo con un clic:")
}

/// Builds and runs the member channels for the outbox worker.
final class MemberChannelSinks: Sendable {
    let reach: MemberReach
    let client: PostgresClient
    let smtp: SMTPClients
    let campuses: CampusDirectory
    let pushKeys: PushKeyStore
    let subscriptions: PushSubscriptionStore
    /// The outbox's clock: whether a reminder is still of today and outside quiet hours.
    let clock: @Sendable () -> Date

    init(reach: MemberReach, client: PostgresClient, kek: KeyEncryptionKey?, clock: @escaping @Sendable () -> Date = { Date() }) {
        self.reach = reach
        self.client = client
        self.clock = clock
        self.pushKeys = PushKeyStore(client: client, kek: kek)
        self.subscriptions = PushSubscriptionStore(client: client, kek: kek)
        self.smtp = SMTPClients(allowedHosts: reach.allowedHosts)
        self.campuses = CampusDirectory(store: CampusStore(client: client), ttl: .seconds(5))
        self.lookups = LookupBatcher { day, users in try await Self.recipients(client, reach: reach, day: day, users: users) }
    }

    /// The members of events delivered at once, read together: one query for a batch of a
    /// day's reminders, not one a message.
    private let lookups: LookupBatcher<RecipientDay, UserID, Row>

    /// Each campus's unsubscribe keys with the secret they were derived from: derived (HKDF)
    /// once, not for every message (4% of a reminder's CPU), and again when the secret changes.
    private let unsubscribeKeys = Mutex<[CampusID: (secret: SymmetricKey, tokens: UnsubscribeTokens)]>([:])

    /// The campus's unsubscribe tokens, from its secret as it is now.
    func unsubscribeTokens(campus: CampusID) async throws -> UnsubscribeTokens {
        let secret = try await reach.unsubscribeSecret(campus)
        if let known = unsubscribeKeys.withLock({ $0[campus] }), known.secret == secret { return known.tokens }
        let tokens = UnsubscribeTokens(campusSecret: secret)
        unsubscribeKeys.withLock { $0[campus] = (secret, tokens) }
        return tokens
    }

    struct RecipientDay: Hashable, Sendable {
        var campus: CampusID
        var date: LocalDate
    }

    struct Row: Sendable {
        var name, email: String
        var language: String?
        var attested, emailOn, pushOn: Bool
        var quietHours: (from: Int, to: Int)?
    }

    private static func recipients(_ client: PostgresClient, reach: MemberReach, day: RecipientDay, users: [UserID]) async throws
        -> [UserID: Row]
    {
        let rows = try await client.query(
            """
            WITH r AS (\(reach.recipients.select(day.campus, users, day.date)))
            SELECT r.user_id, r.email, r.display_name, r.attested, coalesce(n.email, true) AND r.email NOT LIKE '%.invalid' AS email_on,
                   coalesce(n.push, false) AS push_on, n.language, n.quiet_from, n.quiet_to
            FROM r LEFT JOIN member_notifications n ON n.campus_id = \(day.campus) AND n.user_id = r.user_id
            """, campus: day.campus.rawValue)
        var found: [UserID: Row] = [:]
        for row in rows {
            let from = try row.decode("quiet_from", as: Int16?.self), to = try row.decode("quiet_to", as: Int16?.self)
            found[UserID(try row.decode("user_id"))] = Row(
                name: try row.decode("display_name"), email: try row.decode("email"), language: try row.decode("language"),
                attested: try row.decode("attested"), emailOn: try row.decode("email_on"), pushOn: try row.decode("push_on"),
                quietHours: from.flatMap { from in to.map { (Int(from), Int($0)) } })
        }
        return found
    }

    func make(id: String, settings: JSONValue, campus: CampusID) throws -> any NotificationSink {
        try MemberChannels.validate(id: id, settings: settings)
        let transport: MemberChannelSink.Transport
        if id == MemberChannels.email {
            let email = try EmailSettings(settings)
            let host = URL(string: reach.origin)?.host ?? "attest.invalid"
            transport = .email(email, try smtp.client(for: email.server, clientName: host))
        } else if id == MemberChannels.webPush {
            transport = .webPush(try WebPushSettings(settings))
        } else {
            guard let print = reach.terminal else {
                throw PluginSettingsError(
                    "the terminal channel prints members' addresses and unsubscribe links on the server's output: attest dev only; use email or web-push"
                )
            }
            transport = .terminal(print)
        }
        return MemberChannelSink(transport: transport, campus: campus, owner: self)
    }

    /// The member an event names, their address and choices; nil when the event names
    /// nobody who should hear of it now (not a reminder, inactive, erased, attested since). An
    /// address in the reserved `.invalid` domain (RFC 2606: a directory's user it gave none) is
    /// never mailed. A reminder whose sending comes late (the relay refused it for a while, the
    /// server was down) is not sent once its day has ended on the campus's clock or once the
    /// member's quiet hours have begun.
    func recipient(_ notification: AttestNotification, campus: Campus) async throws -> Recipient? {
        guard MemberChannels.events.contains(notification.event), let text = notification.userId, let uuid = UUID(uuidString: text)
        else { return nil }
        let user = UserID(uuid), now = clock()
        let date = notification.date.flatMap(LocalDate.init) ?? campus.localDate(at: now)
        let isReminder = notification.event == .reminderDue
        if isReminder, date != campus.localDate(at: now) { return nil }
        // A reminder goes only to a member who has not attested since; a guest's arrival to its host.
        guard let row = try await lookups.value(for: user, in: RecipientDay(campus: campus.id, date: date)),
            !isReminder || !row.attested
        else { return nil }
        if isReminder, NotificationPreferences(quietHours: row.quietHours).isQuiet(Reminders.minute(campus, at: now)) { return nil }
        var guest: String?
        if notification.event == .guestArrived {
            guard let visit = notification.attestationId.flatMap(UUID.init(uuidString:)) else { return nil }
            let names = try await client.query(reach.recipients.guestName(campus.id, visit), campus: campus.id.rawValue)
            guard let name = try names.first?.decode("name", as: String?.self) else { return nil }  // erased since
            guest = name
        }
        return Recipient(
            user: user, name: row.name, email: row.email, language: row.language ?? Self.defaultLanguage(campus), emailOn: row.emailOn,
            pushOn: row.pushOn, guest: guest)
    }

    struct Recipient {
        var user: UserID
        var name, email, language: String
        var emailOn, pushOn: Bool
        /// For `guest.arrived`: the name the guest gave.
        var guest: String?
    }

    /// The language of members who chose none: English, the pages' own default.
    static func defaultLanguage(_ campus: Campus) -> String { "en" }
}

/// One campus's `email` or `terminal` channel.
struct MemberChannelSink: NotificationSink {
    enum Transport {
        case email(EmailSettings, SMTPClient)
        case terminal(@Sendable (String) -> Void)
        case webPush(WebPushSettings)
    }

    let transport: Transport
    let campus: CampusID
    let owner: MemberChannelSinks

    func deliver(_ notification: AttestNotification, payload: Data, context: PluginContext) async -> DeliveryResult {
        let message: MemberMessage, recipient: MemberChannelSinks.Recipient, campus: Campus
        do {
            guard let found = try await owner.campuses.campus(slug: notification.campus), found.id == self.campus else {
                return .reject("the campus no longer exists")
            }
            campus = found
            guard let member = try await owner.recipient(notification, campus: campus) else { return .delivered }  // nobody to tell now
            recipient = member
            let channel: NotificationChannel = if case .webPush = transport { .push } else { .email }
            guard channel == .push ? member.pushOn : member.emailOn else { return .delivered }  // the member turned it off
            let tokens = try await owner.unsubscribeTokens(campus: campus.id)
            let unsubscribe = tokens.token(campus: campus.id, user: member.user, channel: channel)
            if let guest = member.guest {
                message = MemberMessage.guestArrived(
                    campus: campus, name: member.name, address: member.email, guest: guest, color: notification.color,
                    language: member.language, origin: owner.reach.origin, unsubscribeToken: unsubscribe)
            } else {
                message = MemberMessage.reminder(
                    campus: campus, name: member.name, address: member.email, language: member.language, origin: owner.reach.origin,
                    unsubscribeToken: unsubscribe)
            }
        } catch {
            return .retry("cannot read the member's address or choices: \(error)")
        }
        let now = Date()
        switch transport {
        case .terminal(let print):
            let mail = message.mail(from: MailAddress(name: "Campus Attest", address: "attest@localhost"), replyTo: nil, now: now)
            let headers = mail.headerFields(boundary: "-").filter { !["MIME-Version", "Content-Type"].contains($0.name) }
            print(
                "── a message, as email would send it (attest dev prints it; no mail is sent) ──\n"
                    + headers.map { "\($0.name): \($0.value)" }.joined(separator: "\n") + "\n\n" + message.text + "\n──")
            return .delivered
        case .email(let settings, let smtp):
            let mail = message.mail(from: settings.from, replyTo: settings.replyTo, now: now)
            let data: String
            do { data = try mail.signed(by: settings.dkim, boundary: MailMessage.newBoundary(), now: now) } catch {
                return .reject("cannot sign the message: \(error)")
            }
            do {
                try await smtp.send(from: settings.from.address, to: [message.to.address], data: data)
                return .delivered
            } catch {
                return error.isPermanent ? .reject(error.description) : .retry(error.description)
            }
        case .webPush(let settings):
            return await WebPushDelivery(settings: settings, owner: owner).send(
                message, campus: campus, user: recipient.user, http: context.http, now: now)
        }
    }
}

extension MemberChannels {
    /// Sends `campus`'s reminder to one member now, through the `email` channel's `settings`
    /// (`attest notify test`), as the outbox would send it. Returns where it went; throws
    /// `PluginSettingsError` or `SMTPFailure`, each one line saying what failed.
    public static func sendTestReminder(
        settings: JSONValue, campus: Campus, user: UserID, name: String, address: String, language: String, origin: String,
        unsubscribeSecret: SymmetricKey, allowedHosts: Set<String>
    ) async throws -> String {
        let email = try EmailSettings(settings)
        let message = MemberMessage.reminder(
            campus: campus, name: name, address: address, language: language, origin: origin,
            unsubscribeToken: UnsubscribeTokens(campusSecret: unsubscribeSecret).token(campus: campus.id, user: user, channel: .email))
        let now = Date()
        let data = try message.mail(from: email.from, replyTo: email.replyTo, now: now).signed(
            by: email.dkim, boundary: MailMessage.newBoundary(), now: now)
        let client = try SMTPClient(
            server: email.server, allowedHosts: allowedHosts, clientName: URL(string: origin)?.host ?? "attest.invalid")
        do {
            try await client.send(from: email.from.address, to: [address], data: data)
        } catch {
            await client.shutdown()
            throw error
        }
        await client.shutdown()
        return "\(email.server.host):\(email.server.port) (\(email.server.security.rawValue)\(email.dkim == nil ? "" : ", DKIM-signed"))"
    }
}

extension MemberChannels {
    /// Sends `campus`'s reminder to each browser the member subscribed, now, through the
    /// `web-push` channel's `settings` (`attest notify test --channel push`), as the outbox
    /// would. Returns how many browsers took it; throws `PluginSettingsError`, or
    /// `PushTestFailure` saying in one line what failed (no browser, the push service's status).
    public static func sendTestPush(
        settings: JSONValue, campus: Campus, user: UserID, name: String, address: String, language: String, origin: String,
        unsubscribeSecret: SymmetricKey, client: PostgresClient, kek: KeyEncryptionKey, http: any PluginHTTPClient
    ) async throws -> Int {
        let push = try WebPushSettings(settings)
        let owner = MemberChannelSinks(
            reach: MemberReach(
                recipients: .init { _, _, _ in "SELECT NULL::uuid AS user_id" }, unsubscribeSecret: { _ in unsubscribeSecret },
                origin: origin),
            client: client, kek: kek)
        let browsers = try await owner.subscriptions.list(campus: campus.id, user: user)
        guard !browsers.isEmpty else {
            throw PushTestFailure("\(address) has subscribed no browser: Settings, Get reminders on this browser")
        }
        let message = MemberMessage.reminder(
            campus: campus, name: name, address: address, language: language, origin: origin,
            unsubscribeToken: UnsubscribeTokens(campusSecret: unsubscribeSecret).token(campus: campus.id, user: user, channel: .push))
        switch await WebPushDelivery(settings: push, owner: owner).send(message, campus: campus, user: user, http: http, now: Date()) {
        case .delivered: return browsers.count
        case .retry(let reason), .reject(let reason): throw PushTestFailure(reason)
        }
    }
}

/// Why `attest notify test --channel push` sent nothing, in one line.
public struct PushTestFailure: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
