import AttestFoundation
import AttestPlugins
import AttestPostgres
import Crypto
import Foundation
import Identity
import Synchronization
import Tenancy

/// A member's badge for one campus-local day.
public struct Badge: Sendable, Equatable {
    public var color: BadgeColor
    public var date: LocalDate
    public var validUntil: Date
    public var reason: String
    /// A compact JWS (ES256) a door scanner can check offline against `GET …/badge-keys`.
    public var token: String
    /// Whether the member submitted today's attestation (false: the gray "not submitted" badge).
    public var submitted: Bool
}

/// What a badge token says: campus slug, the member's pseudonym for the day (never the
/// email), the campus-local date, the colour, issued-at and expiry (seconds since 1970); a
/// guest's day pass also `guest`, the name of the member they visit (DESIGN §12).
public struct BadgeClaims: Encodable, Sendable, Equatable {
    public var campus: String
    public var sub: String
    public var date: String
    public var color: String
    public var iat: Int
    public var exp: Int
    /// A guest's badge: their host's name, which the scanner shows ("Guest of …").
    public var guest: String?

    public init(campus: String, sub: String, date: String, color: String, iat: Int, exp: Int, guest: String? = nil) {
        (self.campus, self.sub, self.date, self.color, self.iat, self.exp) = (campus, sub, date, color, iat, exp)
        self.guest = guest
    }

    /// The claims as the token carries them: compact JSON, keys sorted.
    var json: String { jsonBytes.text }

    /// `json`'s bytes, as signed.
    var jsonBytes: JSONBytes {
        var json = JSONBytes(capacity: 96 + campus.utf8.count + sub.utf8.count)
        json.literal(#"{"campus":"#)
        json.string(campus)
        json.literal(#","color":"#)
        json.string(color)
        json.literal(#","date":"#)
        json.string(date)
        json.literal(#","exp":"#)
        json.integer(exp)
        if let guest {
            json.literal(#","guest":"#)
            json.string(guest)
        }
        json.literal(#","iat":"#)
        json.integer(iat)
        json.literal(#","sub":"#)
        json.string(sub)
        json.literal("}")
        return json
    }

    /// Numeric claims are below this magnitude (2^53): the integers every JSON reader holds
    /// exactly. A larger one, or a text that rounds to it, cannot be an honest time.
    static let integerLimit = 9_007_199_254_740_992.0

    /// Reads claims whose signature has been verified, strictly: exactly these six members
    /// (seven with a guest's `guest`), the strings 1 to 200 bytes, `iat` and `exp` integers
    /// within ±(2^53 − 1), `date` a real calendar date and `color` one of the four. Nil for
    /// anything else.
    init?(verifiedJSON bytes: Data) {
        guard case .object(let object)? = try? JSONValue(parsing: bytes), object.count == (object["guest"] == nil ? 6 : 7) else {
            return nil
        }
        func text(_ key: String) -> String? {
            guard case .string(let value)? = object[key], (1...200).contains(value.utf8.count) else { return nil }
            return value
        }
        func integer(_ key: String) -> Int? {
            guard case .number(let value)? = object[key], abs(value) < Self.integerLimit else { return nil }
            return Int(exactly: value)
        }
        guard let campus = text("campus"), let sub = text("sub"), let date = text("date"), LocalDate(date) != nil,
            let color = text("color"), BadgeColor(rawValue: color) != nil, let iat = integer("iat"), let exp = integer("exp")
        else { return nil }
        let guest = text("guest")
        guard guest != nil || object["guest"] == nil else { return nil }
        self.init(campus: campus, sub: sub, date: date, color: color, iat: iat, exp: exp, guest: guest)
    }
}

/// Why a presented badge token is not accepted.
public enum BadgeRejection: String, Sendable, Equatable {
    case malformed = "malformed"
    case otherCampus = "other-campus"
    case unknownKey = "unknown-key"
    case badSignature = "bad-signature"
    case expired = "expired"

    public var detail: String {
        switch self {
        case .malformed: "This is not a badge token: ask the member to show the badge again."
        case .otherCampus: "This badge was issued by another campus."
        case .unknownKey:
            "The badge was not signed by this campus: it is another campus's badge, was signed with a key retired more than two days ago, or is forged."
        case .badSignature: "The badge's signature does not match its contents: it was altered or forged."
        case .expired: "The badge has expired: badges are valid until the end of the day they were issued for."
        }
    }
}

/// The outcome of checking a badge token.
public enum BadgeVerification: Sendable, Equatable {
    case valid(BadgeClaims)
    case invalid(BadgeRejection)
}

/// Signs and checks badge tokens: JWS compact serialisation, ES256 (RFC 7515/7518).
public enum BadgeToken {
    /// Header and claims are JSON with sorted keys and no spaces, written directly.
    public static func sign(_ claims: BadgeClaims, with key: BadgeKey) throws -> String {
        guard let privateKey = key.privateKey else { throw CampusError.noKeyEncryptionKey }
        let input = signingInput(claims, key: key)
        let signature = try privateKey.signature(for: input).rawRepresentation
        return signature.withUnsafeBytes { token(input, signature: $0) }
    }

    /// The header and the claims, each base64url, joined by a dot: what is signed, and the
    /// token's start (with room left for the rest).
    static func signingInput(_ claims: BadgeClaims, key: BadgeKey) -> [UInt8] {
        let json = claims.jsonBytes.bytes
        var input: [UInt8] = []
        input.reserveCapacity(key.encodedHeader.utf8.count + Base64URL.encodedCount(json.count) + 2 + Base64URL.encodedCount(64))
        input.append(contentsOf: key.encodedHeader.utf8)
        input.append(UInt8(ascii: "."))
        json.withUnsafeBytes { Base64URL.append($0, to: &input) }
        return input
    }

    /// The token: the signing input, a dot, and the signature base64url.
    static func token(_ signingInput: consuming [UInt8], signature: UnsafeRawBufferPointer) -> String {
        var token = signingInput
        token.append(UInt8(ascii: "."))
        Base64URL.append(signature, to: &token)
        return String(decoding: token, as: UTF8.self)
    }

    /// Checks a token presented at `campus`: shape, key, signature, then what the verified
    /// claims say (campus, expiry), so the answer names the first thing wrong. Nothing of the
    /// claims is read before the signature verifies; the header only for its algorithm and key id.
    public static func verify(_ token: String, campus: String, keys: [BadgeKey], now: Date) -> BadgeVerification {
        guard token.utf8.count <= 4096 else { return .invalid(.malformed) }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerData = Base64URL.decode(parts[0]), let payload = Base64URL.decode(parts[1]),
            let signatureData = Base64URL.decode(parts[2]),
            case .object(let header)? = try? JSONValue(parsing: headerData),
            case .string(let alg)? = header["alg"], case .string(let kid)? = header["kid"]
        else { return .invalid(.malformed) }
        guard alg == "ES256", let key = keys.first(where: { $0.kid == kid }) else { return .invalid(.unknownKey) }
        guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureData),
            key.publicKey.isValidSignature(signature, for: Data((parts[0] + "." + parts[1]).utf8))
        else { return .invalid(.badSignature) }
        // Signed with this campus's key: only now are the claims read.
        guard let claims = BadgeClaims(verifiedJSON: payload) else { return .invalid(.malformed) }
        guard claims.campus == campus else { return .invalid(.otherCampus) }
        guard Double(claims.exp) > now.timeIntervalSince1970 else { return .invalid(.expired) }
        return .valid(claims)
    }
}

/// Today's badge and the checking of presented ones.
public struct BadgeService: Sendable {
    public let keys: BadgeKeyStore
    /// Concurrent badge reads of one campus and day are looked up together, one query per batch.
    private let lookups: LookupBatcher<BadgeDay, UserID, Member>

    struct BadgeDay: Hashable, Sendable {
        var campus: CampusID
        var date: LocalDate
    }

    /// A member's pseudonym and, when there is one, the day's attestation.
    struct Member: Sendable {
        var pseudonym: UUID
        var attestation: (color: String, reason: String, validUntil: Date)?
        /// The member's health status, when they have a record.
        var health: HealthStatus?
    }

    /// Weighs a member's health record against the day's answers (the campus's rule's
    /// `decide`, `AttestationService.decide(health:answered:campus:at:)`); without it, the
    /// platform's default.
    public typealias HealthDecider = @Sendable (HealthStatus, BadgeDecision?, Campus, Date) async -> BadgeDecision?
    let decideHealth: HealthDecider?

    /// A member's badge of one day, kept with their verified session (see `today`): what its
    /// token was made from and its signature, not the token's text, since a server keeps one
    /// for each member it has recently seen. What many members' badges share
    /// (colour, day, reason, key) is one `Shared` for all of them.
    final class Kept: Sendable {
        let shared: Shared
        let subject: (UInt64, UInt64)
        let iat: Int
        let signature: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)

        /// Nil when the token is not of the shape `BadgeToken.sign` makes.
        init?(shared: Shared, badge: Badge, claims: BadgeClaims) {
            let parts = badge.token.split(separator: ".")
            guard parts.count == 3, let subject = Base64URL.decode(Substring(claims.sub)), subject.count == 16,
                let signature = Base64URL.decode(parts[2]), signature.count == 64, claims.exp == shared.exp
            else { return nil }
            var sub: (UInt64, UInt64) = (0, 0)
            withUnsafeMutableBytes(of: &sub) { $0.copyBytes(from: subject) }
            var sig: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)
            withUnsafeMutableBytes(of: &sig) { $0.copyBytes(from: signature) }
            (self.shared, self.subject, self.iat, self.signature) = (shared, sub, claims.iat, sig)
        }

        /// Whether this was made for that campus and day with that key.
        func isFor(campus: CampusID, date: LocalDate, kid: String) -> Bool {
            shared.key.campus == campus && shared.key.date == date && shared.key.kid == kid
        }

        /// The badge again, its token written out from the same claims and signature.
        func badge(campus slug: String, key: BadgeKey) -> Badge {
            let sub = withUnsafeBytes(of: subject) { Base64URL.encode($0) }
            let claims = BadgeClaims(
                campus: slug, sub: sub, date: shared.key.date.description, color: shared.key.color.rawValue, iat: iat, exp: shared.exp)
            let token = withUnsafeBytes(of: signature) { BadgeToken.token(BadgeToken.signingInput(claims, key: key), signature: $0) }
            return Badge(
                color: shared.key.color, date: shared.key.date, validUntil: shared.key.validUntil, reason: shared.key.reason,
                token: token, submitted: shared.key.color != .gray)
        }
    }

    /// What the kept badges of one campus, day, colour, reason and key have in common.
    final class Shared: Sendable {
        struct Key: Hashable, Sendable {
            var campus: CampusID
            var date: LocalDate
            var color: BadgeColor
            var validUntil: Date
            var reason: String
            var kid: String
        }

        let key: Key
        let exp: Int

        init(_ key: Key, exp: Int) { (self.key, self.exp) = (key, exp) }
    }

    /// One `Shared` per distinct key, at most 1,000 (a campus has a handful a day).
    final class SharedParts: Sendable {
        private let parts = Mutex<[Shared.Key: Shared]>([:])

        func shared(_ key: Shared.Key, exp: Int) -> Shared {
            parts.withLock { parts in
                if let found = parts[key], found.exp == exp { return found }
                if parts.count >= 1_000 { parts.removeAll() }
                let made = Shared(key, exp: exp)
                parts[key] = made
                return made
            }
        }
    }

    private let sharedParts = SharedParts()

    public init(client: PostgresClient, keys: BadgeKeyStore, decideHealth: HealthDecider? = nil) {
        self.keys = keys
        self.decideHealth = decideHealth
        self.lookups = LookupBatcher { day, users in try await Self.members(client, day: day, users: users) }
    }

    public static let notSubmitted = "Not submitted today: answer today's survey to get your badge."

    /// The member's badge for the campus-local day of `now`: the colour of today's
    /// attestation, or gray when there is none.
    ///
    /// A member with a health record (`member_health`) has their rule's `decide` weigh it
    /// against the day's answers: an isolation is red, answered or not. Without a record, a
    /// badge with a colour never changes during its day (a member submits once a day and
    /// an attestation is never edited; a record's first entry moves the campus's sign-in
    /// generation on, which drops what is kept), so once made it is kept in `kept` (the member's
    /// verified session's place for such things, which lives as long as the server trusts the
    /// session) and served again while it is the same day there, before its `validUntil`,
    /// and the campus's current key signed it. A gray badge is never served from `kept`
    /// without the database: every read of one asks whether the member has submitted, so the
    /// first read after a submission, on whichever server, finds the colour. Only its
    /// signature is kept, so a member still gray is not signed for again and again.
    public func today(campus: Campus, user: UserID, now: Date, kept: KeptValue? = nil) async throws -> Badge {
        let date = campus.localDate(at: now)
        guard let key = try await keys.keys(campus: campus.id).first(where: { $0.retiredAt == nil }) else {
            throw SurveysError.noSigningKey(campus: campus.slug)
        }
        // The place is the member's own session's, at this campus.
        let keptBadge = kept?.kept(Kept.self)
        if let badge = keptBadge, badge.shared.key.color != .gray, badge.isFor(campus: campus.id, date: date, kid: key.kid),
            badge.shared.key.validUntil > now
        {
            return badge.badge(campus: campus.slug, key: key)
        }
        guard let member = try await lookups.value(for: user, in: BadgeDay(campus: campus.id, date: date)) else {
            throw SurveysError.unknownUser
        }
        var color = BadgeColor.gray, reason = Self.notSubmitted, validUntil = campus.nextWindow(after: now)
        if let stored = member.attestation {
            color = BadgeColor(rawValue: stored.color) ?? .yellow
            (reason, validUntil) = (stored.reason, stored.validUntil)
        }
        if let health = member.health {
            // The record weighed against the answers: what the campus's rule decides.
            let answered = member.attestation.map { _ in BadgeDecision(color: color, reason: reason, validUntil: validUntil) }
            let endOfDay = campus.nextWindow(after: now)
            let decided =
                await decideHealth?(health, answered, campus, now)
                ?? HealthInput(answered: answered, health: health, date: date, endOfDay: endOfDay, timeZone: campus.zone).standardDecision
            if let decided, decided.color != .gray {
                (color, reason) = (decided.color, String(decided.reason.prefix(500)))
                validUntil =
                    decided.validUntil.timeIntervalSince1970.isFinite && decided.validUntil > now
                    ? min(decided.validUntil, endOfDay) : endOfDay
            }
        } else if member.attestation == nil, let gray = keptBadge, gray.shared.key.color == .gray,
            gray.isFor(campus: campus.id, date: date, kid: key.kid),
            gray.shared.key.validUntil == validUntil
        {
            // Still not submitted, as the database says: the gray token signed before.
            return gray.badge(campus: campus.slug, key: key)
        }
        let subject = BadgeKeyStore.subject(pseudonym: member.pseudonym, date: date, key: try await keys.subjectKey(campus: campus.id))
        let claims = BadgeClaims(
            campus: campus.slug, sub: subject, date: date.description, color: color.rawValue,
            iat: Int(now.timeIntervalSince1970), exp: Int(validUntil.timeIntervalSince1970.rounded(.up)))
        let badge = Badge(
            color: color, date: date, validUntil: validUntil, reason: reason, token: try BadgeToken.sign(claims, with: key),
            submitted: member.attestation != nil)
        // A badge weighed against a health record is not kept: the record may change within
        // the day (a result, a release), and a member with one reads it every time.
        if let kept, member.health == nil {
            let shared = sharedParts.shared(
                .init(campus: campus.id, date: date, color: color, validUntil: validUntil, reason: reason, kid: key.kid), exp: claims.exp)
            kept.keep(Kept(shared: shared, badge: badge, claims: claims))
        }
        return badge
    }

    static func members(_ client: PostgresClient, day: BadgeDay, users: [UserID]) async throws -> [UserID: Member] {
        let rows = try await client.query(
            """
            SELECT u.id, u.pseudonym, \(UserStore.health), a.color, a.reason, a.valid_until
            FROM users u
            LEFT JOIN attestations a ON a.campus_id = u.campus_id AND a.user_id = u.id AND a.local_date = \(day.date)
            WHERE u.campus_id = \(day.campus) AND u.id = ANY(\(users.map(\.rawValue)))
            """, campus: day.campus.rawValue)
        var members: [UserID: Member] = [:]
        for row in rows {
            var member = Member(
                pseudonym: try row.decode("pseudonym"), health: HealthStatus.stored(try row.decode("health", as: PostgresJSON?.self)))
            if let color = try row.decode("color", as: String?.self) {
                member.attestation = (color, try row.decode("reason"), try row.decode("valid_until"))
            }
            members[UserID(try row.decode("id", as: UUID.self))] = member
        }
        return members
    }

    /// A guest's day pass: the colour the guest survey gave (gray before it is answered), the
    /// visit's pseudonym for the day, and `guest`, the host's name, in the signed claims.
    public func guest(
        campus: Campus, visit: UUID, host: String, answered: (color: BadgeColor, reason: String, validUntil: Date)?, now: Date
    )
        async throws -> Badge
    {
        let date = campus.localDate(at: now)
        guard let key = try await keys.keys(campus: campus.id).first(where: { $0.retiredAt == nil }) else {
            throw SurveysError.noSigningKey(campus: campus.slug)
        }
        var color = BadgeColor.gray, reason = Self.notSubmitted, validUntil = campus.nextWindow(after: now)
        if let answered, answered.validUntil > now {
            // A day pass: never past the end of its day, whatever the row holds.
            (color, reason, validUntil) = (answered.color, answered.reason, min(answered.validUntil, validUntil))
        }
        let subject = BadgeKeyStore.subject(pseudonym: visit, date: date, key: try await keys.subjectKey(campus: campus.id))
        var hostName = host.isEmpty ? "a member" : host
        while hostName.utf8.count > 200 { hostName.removeLast() }  // the claims' strings are at most 200 bytes
        let issued = Int(exactly: now.timeIntervalSince1970.rounded(.down)) ?? 0
        let claims = BadgeClaims(
            campus: campus.slug, sub: subject, date: date.description, color: color.rawValue, iat: issued,
            exp: Int(exactly: validUntil.timeIntervalSince1970.rounded(.up)) ?? issued, guest: hostName)
        return Badge(
            color: color, date: date, validUntil: validUntil, reason: reason, token: try BadgeToken.sign(claims, with: key),
            submitted: answered != nil)
    }

    /// Checks a token presented at `campus`'s door.
    public func verify(token: String, campus: Campus, now: Date) async throws -> BadgeVerification {
        BadgeToken.verify(token, campus: campus.slug, keys: try await keys.keys(campus: campus.id), now: now)
    }
}
