import AttestFoundation
import AttestPlugins
import AttestPostgres
import Crypto
import Foundation
import Tenancy

/// A campus's rules for guests (DESIGN §12), from its settings: whether it takes them
/// (`guests on`), how many a day (`guest-daily-cap`, 200 by default), how long a visit is
/// kept (`guest-retention-days`, 14), and whom a guest turned away should contact
/// (`guest-contact`).
public struct GuestPolicy: Sendable, Equatable {
    public var open = false
    public var dailyCap = 200
    public var retentionDays = 14
    public var contact: String?

    public init(campus: Campus) {
        guard case .object(let settings) = campus.settings.bytes.withUnsafeBytes({ try? JSONValue(parsing: $0) }) ?? .null else { return }
        if case .string(let text)? = settings["guests"] { open = text == "on" }
        if case .string(let text)? = settings["guest-daily-cap"], let cap = Int(text), (0...100_000).contains(cap) { dailyCap = cap }
        if case .string(let text)? = settings["guest-retention-days"], let days = Int(text), (1...3650).contains(days) {
            retentionDays = days
        }
        if case .string(let text)? = settings["guest-contact"], !text.isEmpty { contact = text }
    }

    /// How long an emailed code is good for, and how many wrong codes a visit takes.
    public static let codeLifetime: TimeInterval = 600
    public static let codeTries = 5
    /// Visits one address may register in a campus-local day.
    public static let visitsPerEmail = 3
}

/// One visit, as the guest's session and the pages see it.
public struct GuestVisit: Sendable, Equatable {
    public var id: UUID
    public var name: String
    public var email: String
    public var host: UserID
    public var hostName: String
    /// The campus-local day the visit is good for.
    public var date: LocalDate
    /// What the guest survey gave, once answered.
    public var color: BadgeColor?
    public var reason: String?
    public var validUntil: Date?
    /// At a kiosk: the screener who vouched.
    public var screener: UserID?
}

/// Why a guest's step was refused; each says what to do.
public enum GuestError: Error, Equatable, CustomStringConvertible {
    case closed(campus: String)
    case invalid([FieldError])
    case hostNotFound(String)
    case hostAmbiguous(String)
    case dailyCapReached(contact: String?)
    case tooManyForEmail
    case unknownVisit
    case alreadyVerified
    case locked
    case codeExpired
    case wrongCode(triesLeft: Int)

    public struct FieldError: Sendable, Equatable {
        public var field: String
        public var message: String
    }

    public var description: String {
        switch self {
        case .closed(let campus): "\(campus) does not take guests online. Ask your host, or the front desk, to let you in."
        case .invalid(let problems): problems.map { "\($0.field) \($0.message)" }.joined(separator: "; ")
        case .hostNotFound(let host):
            "No member of this campus is \"\(host)\": give your host's full name as the campus knows it, or their email address."
        case .hostAmbiguous(let host): "Several members are called \"\(host)\": give your host's email address instead."
        case .dailyCapReached(let contact):
            "This campus has registered as many guests today as it takes in a day. "
                + (contact.map { "Contact \($0)." } ?? "Contact your host.")
        case .tooManyForEmail: "This email address has registered \(GuestPolicy.visitsPerEmail) visits today, the most a day allows."
        case .unknownVisit: "There is no such visit at this campus: register again."
        case .alreadyVerified: "This visit's code was already used. Register again for a new visit."
        case .locked: "\(GuestPolicy.codeTries) wrong codes were tried: this visit is locked. Register again to get a new code."
        case .codeExpired: "The code has expired (it is good for 10 minutes): register again for a new one."
        case .wrongCode(let left):
            "is not the code that was sent: \(left) \(left == 1 ? "try" : "tries") left. Copy the six digits from the email."
        }
    }
}

/// Visits and guests' sessions (Identity owns `guest_visits`): registration with an emailed
/// code or a screener's word, the code's check, the guest's session for one campus-local day,
/// the day's badge, erasure and the purge after the campus's retention.
///
/// A code is kept only as a keyed hash (HMAC-SHA-256 with a campus secret), so the database
/// alone does not give it; a session token only as its SHA-256.
public struct GuestStore: Sendable {
    let client: PostgresClient
    /// The campus secret codes, addresses and erasure links are keyed with.
    let secret: @Sendable (CampusID) async throws -> SymmetricKey

    public init(client: PostgresClient, secret: @escaping @Sendable (CampusID) async throws -> SymmetricKey) {
        (self.client, self.secret) = (client, secret)
    }

    /// What registering gives: the visit, and (online) the code to email, the link to erase it.
    public struct Registration: Sendable {
        public var visit: GuestVisit
        /// The six digits, to send; nil at a kiosk.
        public var code: String?
        public var codeExpiresAt: Date
        public var eraseToken: String
        /// At a kiosk: the guest's session at once.
        public var session: (token: String, expiresAt: Date)?
    }

    /// A guest's session token: `guest.` and 43 base64url characters.
    public static let tokenPrefix = "guest."

    public static func isGuestToken(_ token: String) -> Bool { token.hasPrefix(tokenPrefix) }

    /// Checks what a visitor typed: name (1–200 characters, no control characters), email, host.
    public static func checked(name: String, email: String, host: String) throws -> (name: String, email: String, host: String) {
        var problems: [GuestError.FieldError] = []
        let name = name.trimmingCharacters(in: .whitespacesAndNewlines)
        // Counted as PostgreSQL counts (code points): a name of combining marks is short in Characters.
        if name.isEmpty || name.unicodeScalars.count > 200
            || name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        {
            problems.append(.init(field: "name", message: "must be your name, 1 to 200 characters on one line"))
        }
        let address = UserStore.normalizedEmail(email)
        if address == nil {
            problems.append(.init(field: "email", message: "must be an email address you can read now, such as ana@example.org"))
        }
        let host = host.trimmingCharacters(in: .whitespacesAndNewlines)
        if host.isEmpty || host.unicodeScalars.count > 320
            || host.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        {
            problems.append(.init(field: "host", message: "must be the name or email address of the member you visit"))
        }
        guard problems.isEmpty, let address else { throw GuestError.invalid(problems) }
        return (name, address, host)
    }

    /// Registers a visit for the campus-local day of `now`: online (`screener` nil) with a code
    /// to email, or at a kiosk with the screener's word, audited, and the guest's session at once.
    /// Throws `GuestError` (closed, invalid, host, cap, too many for the address).
    public func register(
        campus: Campus, name rawName: String, email rawEmail: String, host rawHost: String, screener: (id: UserID, email: String)? = nil,
        now: Date
    ) async throws -> Registration {
        let policy = GuestPolicy(campus: campus)
        guard policy.open else { throw GuestError.closed(campus: campus.name) }
        let (name, email, hostText) = try Self.checked(name: rawName, email: rawEmail, host: rawHost)
        let key = try await secret(campus.id)
        let date = campus.localDate(at: now)
        let id = UUID.timeOrdered(at: now)
        let emailKey = Self.mac(key, "guest-email", email)
        let code = screener == nil ? String(format: "%06d", Int.random(in: 0..<1_000_000)) : nil
        let codeExpiresAt = now.addingTimeInterval(GuestPolicy.codeLifetime)
        let session = screener.map { _ in
            (token: Self.tokenPrefix + SessionStore.newToken(), expiresAt: campus.localDate(at: now).adding(days: 1).start(in: campus.zone))
        }
        // One registration of the campus at a time (the cap is counted, then taken): in this
        // process before a connection is taken, across servers by the advisory lock.
        let visit = try await Self.registrations.inTurn(of: campus.id) {
            try await client.withTransaction(campus: campus.id.rawValue) { connection -> GuestVisit in
                try await connection.query("SELECT \(Self.registrationLock(campus: campus.id))")
                let host = try await Self.host(connection, campus: campus.id, text: hostText)
                let counts = try await connection.query(
                    """
                    SELECT count(*) AS today, count(*) FILTER (WHERE email_key = \(emailKey)) AS same_email
                    FROM guest_visits WHERE campus_id = \(campus.id) AND local_date = \(date)
                    """)
                guard try counts[0].decode("today", as: Int.self) < policy.dailyCap else {
                    throw GuestError.dailyCapReached(contact: policy.contact)
                }
                guard try counts[0].decode("same_email", as: Int.self) < GuestPolicy.visitsPerEmail else {
                    throw GuestError.tooManyForEmail
                }
                let codeHash = code.map { Self.mac(key, "guest-code", id.lowercasedText + "/" + $0) }
                let sessionHash = session.map { SessionStore.hash($0.token) }
                try await connection.query(
                    """
                    INSERT INTO guest_visits (campus_id, id, name, email, email_key, host_id, local_date, created_at, code_hash,
                        code_expires_at, verified_at, screener_id, session_hash, session_expires_at)
                    VALUES (\(campus.id), \(id), \(name), \(email), \(emailKey), \(host.id), \(date), \(now), \(codeHash),
                        \(code == nil ? nil : codeExpiresAt), \(screener == nil ? nil : now), \(screener?.id), \(sessionHash), \(session?.expiresAt))
                    """)
                if let screener {
                    try await AuditLog.record(
                        connection, campus: campus.id, actor: "user:\(screener.email)", action: "guest.vouch",
                        target: "visit \(id.lowercasedText)",
                        details: ["host": host.name])
                }
                return GuestVisit(id: id, name: name, email: email, host: host.id, hostName: host.name, date: date, screener: screener?.id)
            }
        }
        return Registration(
            visit: visit, code: code, codeExpiresAt: codeExpiresAt,
            eraseToken: Self.mac(key, "guest-erase", id.lowercasedText).base64URLEncoded(),
            session: session)
    }

    /// Every campus's registrations in this process, one at a time.
    static let registrations = Turns<CampusID>()

    /// The call that takes `campus`'s registrations lock until its transaction ends (a
    /// SELECT's expression): one registration at a time across servers, so the cap holds.
    public static func registrationLock(campus: CampusID) -> SQL {
        "pg_advisory_xact_lock(hashtextextended('guests:' || \(campus)::text, 0))"
    }

    /// The member a visitor named: by email, or by their name as the campus has it (active members only).
    static func host(_ connection: PostgresConnection, campus: CampusID, text: String) async throws -> (id: UserID, name: String) {
        let rows: PostgresRows
        if let email = UserStore.normalizedEmail(text), text.contains("@") {
            rows = try await connection.query(
                "SELECT id, display_name FROM users WHERE campus_id = \(campus) AND email = \(email) AND active LIMIT 2")
        } else {
            rows = try await connection.query(
                """
                SELECT id, display_name FROM users
                WHERE campus_id = \(campus) AND active AND lower(display_name) = lower(\(text)) LIMIT 2
                """)
        }
        guard let row = rows.first else { throw GuestError.hostNotFound(text) }
        guard rows.count == 1 else { throw GuestError.hostAmbiguous(text) }
        let name: String = try row.decode("display_name")
        return (UserID(try row.decode("id", as: UUID.self)), name.isEmpty ? text : name)
    }

    /// Checks the code of visit `id`: the guest's session for the visit's day, or why not (a
    /// wrong code counts against the visit's tries, and the last one locks it).
    public func verify(campus: Campus, visit id: UUID, code: String, now: Date) async throws -> (token: String, expiresAt: Date) {
        let key = try await secret(campus.id)
        enum Step: Sendable {
            case session(String, Date)
            case wrong(Int)
        }
        let step = try await client.withTransaction(campus: campus.id.rawValue) { connection -> Step in
            let rows = try await connection.query(
                """
                SELECT code_hash, code_expires_at, failed_codes, session_hash IS NOT NULL AS verified FROM guest_visits
                WHERE campus_id = \(campus.id) AND id = \(id) FOR UPDATE
                """)
            guard let row = rows.first else { throw GuestError.unknownVisit }
            guard !(try row.decode("verified", as: Bool.self)) else { throw GuestError.alreadyVerified }
            let failed: Int = try row.decode("failed_codes")
            guard failed < GuestPolicy.codeTries else { throw GuestError.locked }
            guard let expires = try row.decode("code_expires_at", as: Date?.self), let stored = try row.decode("code_hash", as: Data?.self)
            else {
                throw GuestError.unknownVisit
            }
            guard expires > now else { throw GuestError.codeExpired }
            let digits = code.trimmingCharacters(in: .whitespaces)
            let given = Self.mac(key, "guest-code", id.lowercasedText + "/" + digits)
            guard digits.utf8.count == 6, digits.utf8.allSatisfy({ (0x30...0x39).contains($0) }), Self.same(given, stored) else {
                try await connection.query(
                    "UPDATE guest_visits SET failed_codes = failed_codes + 1 WHERE campus_id = \(campus.id) AND id = \(id)")
                return .wrong(GuestPolicy.codeTries - failed - 1)
            }
            let token = Self.tokenPrefix + SessionStore.newToken()
            let expiresAt = campus.localDate(at: now).adding(days: 1).start(in: campus.zone)
            try await connection.query(
                """
                UPDATE guest_visits SET code_hash = NULL, verified_at = \(now), session_hash = \(SessionStore.hash(token)),
                    session_expires_at = \(expiresAt)
                WHERE campus_id = \(campus.id) AND id = \(id)
                """)
            return .session(token, expiresAt)
        }
        switch step {
        case .session(let token, let expiresAt): return (token, expiresAt)
        case .wrong(let left): throw left > 0 ? GuestError.wrongCode(triesLeft: left) : GuestError.locked
        }
    }

    /// The visit a guest's session token stands for at `campus`, while it lasts.
    public func session(campus: CampusID, token: String, now: Date) async throws -> GuestVisit? {
        guard Self.isGuestToken(token), SessionStore.isWellFormed(String(token.dropFirst(Self.tokenPrefix.count))) else { return nil }
        let rows = try await client.query(
            """
            SELECT \(Self.columns) FROM guest_visits v JOIN users u ON u.campus_id = v.campus_id AND u.id = v.host_id
            WHERE v.campus_id = \(campus) AND v.session_hash = \(SessionStore.hash(token)) AND v.session_expires_at > \(now)
            """, campus: campus.rawValue)
        return try rows.first.map(Self.visit(from:))
    }

    static let columns: SQL = """
        v.id, v.name, v.email, v.host_id, u.display_name AS host_name, v.local_date, v.color, v.reason, v.valid_until, v.screener_id
        """

    static func visit(from row: PostgresRow) throws -> GuestVisit {
        let hostName: String = try row.decode("host_name")
        return GuestVisit(
            id: try row.decode("id"), name: try row.decode("name"), email: try row.decode("email"),
            host: UserID(try row.decode("host_id", as: UUID.self)), hostName: hostName.isEmpty ? "your host" : hostName,
            date: try row.decode("local_date"), color: try row.decode("color", as: String?.self).flatMap(BadgeColor.init(rawValue:)),
            reason: try row.decode("reason"), validUntil: try row.decode("valid_until"),
            screener: try row.decode("screener_id", as: UUID?.self).map(UserID.init))
    }

    /// Keeps the guest survey's badge for the visit, once: true the first time (then `announce`,
    /// a statement of the caller's, runs in the same transaction: the host is told), false
    /// when the visit already has its badge.
    public func attest(
        campus: CampusID, visit: UUID, surveyVersion: Int, color: BadgeColor, reason: String, validUntil: Date, now: Date,
        announce: SQL?
    ) async throws -> Bool {
        try await client.withTransaction(campus: campus.rawValue) { connection in
            let updated = try await connection.query(
                """
                UPDATE guest_visits SET survey_version = \(surveyVersion), color = \(color.rawValue),
                    reason = \(String(String.UnicodeScalarView(reason.unicodeScalars.prefix(500)))),
                    valid_until = \(validUntil), attested_at = \(now)
                WHERE campus_id = \(campus) AND id = \(visit) AND attested_at IS NULL
                """)
            guard updated.affectedRows == 1 else { return false }
            if let announce { try await connection.query(announce) }
            return true
        }
    }

    /// Forgets a visit whose code could not be sent (it does not count against any limit).
    public func discard(campus: CampusID, visit id: UUID) async throws {
        try await client.query("DELETE FROM guest_visits WHERE campus_id = \(campus) AND id = \(id)", campus: campus.rawValue)
    }

    /// Erases visit `id` when `token` is its erasure link's; false when it is not (or is gone).
    public func erase(campus: CampusID, visit id: UUID, token: String) async throws -> Bool {
        let key = try await secret(campus)
        guard let given = Data(base64URLEncoded: token), Self.same(given, Self.mac(key, "guest-erase", id.lowercasedText)) else {
            return false
        }
        return try await client.withTransaction(campus: campus.rawValue) { connection in
            let gone = try await connection.query("DELETE FROM guest_visits WHERE campus_id = \(campus) AND id = \(id)")
            guard gone.affectedRows == 1 else { return false }
            try await AuditLog.record(
                connection, campus: campus, actor: "guest", action: "guest.erase", target: "visit \(id.lowercasedText)")
            return true
        }
    }

    /// The visits of a campus-local day that have a badge, by colour: how many.
    public func counts(campus: CampusID, date: LocalDate) async throws -> [BadgeColor: Int] {
        let rows = try await client.query(
            """
            SELECT color, count(*) AS n FROM guest_visits
            WHERE campus_id = \(campus) AND local_date = \(date) AND color IS NOT NULL GROUP BY color
            """, campus: campus.rawValue)
        var counts: [BadgeColor: Int] = [:]
        for row in rows {
            if let color = BadgeColor(rawValue: try row.decode("color")) { counts[color] = try row.decode("n") }
        }
        return counts
    }

    /// The day's guests whose badge is red or yellow, with their host: health officers'
    /// follow-ups (at most 500), the read audited as `actor`'s.
    public func followUps(campus: CampusID, date: LocalDate, actor: String) async throws -> [GuestVisit] {
        try await client.withTransaction(campus: campus.rawValue) { connection in
            let rows = try await connection.query(
                """
                SELECT \(Self.columns) FROM guest_visits v JOIN users u ON u.campus_id = v.campus_id AND u.id = v.host_id
                WHERE v.campus_id = \(campus) AND v.local_date = \(date) AND v.color IN ('red', 'yellow')
                ORDER BY v.color = 'red' DESC, v.attested_at LIMIT 500
                """)
            let visits = try rows.map(Self.visit(from:))
            if !visits.isEmpty {
                try await AuditLog.record(
                    connection, campus: campus, actor: actor, action: "guests.read", target: date.description,
                    details: ["guests": "\(visits.count)"])
            }
            return visits
        }
    }

    /// HMAC-SHA-256 of `purpose` and `text` under the campus's key.
    static func mac(_ key: SymmetricKey, _ purpose: String, _ text: String) -> Data {
        Data(HMAC<SHA256>.authenticationCode(for: Data((purpose + "\u{0}" + text).utf8), using: key))
    }

    /// Compares in time independent of where the two differ.
    static func same(_ a: Data, _ b: Data) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for (x, y) in zip(a, b) { difference |= x ^ y }
        return difference == 0
    }
}

/// The purge of guests after each campus's guest retention: a visit is gone
/// `guest-retention-days` after its day.
public struct GuestUpkeep: DailyUpkeep {
    let client: PostgresClient

    public init(client: PostgresClient) { self.client = client }

    public var name: String { "guests" }

    public func run(campus: Campus, now: Date) async throws -> [String: Int] {
        let days = GuestPolicy(campus: campus).retentionDays
        let cutoff = campus.localDate(at: now.addingTimeInterval(-Double(days) * 86_400))
        let gone = try await client.query(
            "DELETE FROM guest_visits WHERE campus_id = \(campus.id) AND local_date < \(cutoff)", campus: campus.id.rawValue)
        return ["guests_purged": gone.affectedRows]
    }
}

extension GuestStore {
    /// A `SELECT` of the name a guest gave for visit `visit` (column `name`): for the host's
    /// message (`RecipientDirectory.guestName`); no row once erased.
    public static func name(campus: CampusID, visit: UUID) -> SQL {
        "SELECT name FROM guest_visits WHERE campus_id = \(campus) AND id = \(visit)"
    }
}
