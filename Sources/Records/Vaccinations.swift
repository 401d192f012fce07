import AttestFoundation
import AttestPlugins
import AttestPostgres
import Crypto
import Foundation
import Identity
import Tenancy

extension HealthRecords {
    /// What a member's card did.
    public struct Presented: Sendable, Equatable {
        /// The issuers of the cards, as the campus trusts them.
        public var issuers: [String]
        /// The COVID-19 doses the cards gave, by date.
        public var doses: [SmartHealthCards.Dose]
        /// The member's vaccination from all their doses, as recomputed in the same transaction.
        public var vaccination: HealthStatus.Vaccination?
    }

    /// Verifies a member's SMART Health Cards (JWS, from `SmartHealthCards.jws(qr:)` or
    /// `jws(file:)`) and keeps their doses, all or none: each card's issuer must be one the
    /// campus trusts (its own, then the directory's), its signature, date and revocation good,
    /// and its person the member under the campus's `shc-identity`. Keeps the CVX codes,
    /// the days, the issuer and when; never the card. Audited; the member's status follows.
    public func presentCards(campus: Campus, user: User, cards: [String], actor: String, now: Date) async throws -> Presented {
        let opened = try cards.map { card throws(SmartHealthCards.Refused) in try SmartHealthCards.open(card) }
        let issuers = try await trustedIssuers(campus: campus, iss: Set(opened.map(\.issuer)))
        let policy = RecordsPolicy(campus: campus)
        let birthDate = try await client.query(
            "SELECT birth_date FROM users WHERE campus_id = \(campus.id) AND id = \(user.id)", campus: campus.id.rawValue
        ).first?.decode("birth_date", as: LocalDate?.self)
        var verified: [SmartHealthCards.Card] = []
        for card in opened {
            guard let issuer = issuers[card.issuer] else {
                throw SmartHealthCards.Refused(
                    .unknownIssuer,
                    "the card's issuer (\(card.issuer)) is not one this campus trusts: ask the health office, who can add it")
            }
            let card = try SmartHealthCards.verify(card, issuer: issuer, now: now)
            try SmartHealthCards.check(card, member: user.displayName, birthDate: birthDate, identity: policy.shcIdentity)
            verified.append(card)
        }
        let doses = verified.flatMap { card in card.doses.map { (dose: $0, issuer: card.issuer) } }
        let (changed, vaccination) = try await changingRecords(of: campus) { connection in
            try await connection.query(
                """
                INSERT INTO vaccinations (campus_id, user_id, cvx, given_on, issuer, verified_at)
                SELECT \(campus.id), \(user.id), d.cvx, d.given_on, d.issuer, \(now)
                FROM unnest(\(doses.map(\.dose.cvx)), \(doses.map(\.dose.date.description))::date[], \(doses.map(\.issuer)))
                     AS d(cvx, given_on, issuer)
                ON CONFLICT (campus_id, user_id, given_on, cvx) DO UPDATE SET issuer = EXCLUDED.issuer, verified_at = EXCLUDED.verified_at
                """)
            try await AuditLog.record(
                connection, campus: campus.id, actor: actor, action: "vaccination.verify", target: user.email,
                details: ["issuers": Set(verified.map(\.issuer)).sorted().joined(separator: " "), "doses": "\(doses.count)"])
            let changed = try await Self.recompute(connection, campus: campus, users: [user.id.rawValue], policy: policy)
            let stored = try await connection.query(
                "SELECT health FROM member_health WHERE campus_id = \(campus.id) AND user_id = \(user.id)")
            return (changed, HealthStatus.stored(try stored.first?.decode("health", as: PostgresJSON?.self))?.vaccination)
        }
        if changed > 0 { generations?.advance(campus.id) }
        let sortedDoses = Set(doses.map(\.dose)).sorted { ($0.date, $0.cvx) < ($1.date, $1.cvx) }
        return Presented(issuers: Set(verified.map(\.issuer)).sorted(), doses: sortedDoses, vaccination: vaccination)
    }

    /// A member's doses, as kept.
    public struct KeptDose: Sendable, Equatable {
        public var dose: SmartHealthCards.Dose
        public var issuer: String
        public var verifiedAt: Date
    }

    /// The doses kept for a member, by date.
    public func doses(campus: Campus, user: UserID) async throws -> [KeptDose] {
        try await client.query(
            """
            SELECT cvx, given_on, issuer, verified_at FROM vaccinations
            WHERE campus_id = \(campus.id) AND user_id = \(user) ORDER BY given_on, cvx
            """, campus: campus.id.rawValue
        ).map { row in
            KeptDose(
                dose: .init(cvx: try row.decode("cvx"), date: try row.decode("given_on")), issuer: try row.decode("issuer"),
                verifiedAt: try row.decode("verified_at"))
        }
    }

    /// The issuers with these `iss` the campus trusts: its own first, then the directory's.
    func trustedIssuers(campus: Campus, iss: Set<String>) async throws -> [String: TrustedIssuer] {
        let names = Array(iss)
        let rows = try await client.query(
            """
            SELECT iss, NULL::text AS canonical_iss, name, jwks, crls, 0 AS rank FROM shc_issuers
            WHERE campus_id = \(campus.id) AND iss = ANY(\(names))
            UNION ALL
            SELECT iss, canonical_iss, name, jwks, crls, 1 FROM shc_directory WHERE iss = ANY(\(names))
            ORDER BY rank DESC
            """, campus: campus.id.rawValue)
        var issuers: [String: TrustedIssuer] = [:]
        for row in rows {
            let jwks = try row.decode("jwks", as: PostgresJSON.self), crls = try row.decode("crls", as: PostgresJSON.self)
            guard let jwks = try? JSONValue(parsing: jwks.bytes), let keys = try? TrustedIssuer.keys(jwks: jwks) else { continue }
            let lists: [JSONValue] = if case .array(let lists)? = try? JSONValue(parsing: crls.bytes) { lists } else { [] }
            let iss: String = try row.decode("iss")
            issuers[iss] = TrustedIssuer(
                iss: iss, canonical: try row.decode("canonical_iss"), name: try row.decode("name"), keys: keys,
                revocations: TrustedIssuer.revocations(crls: lists))
        }
        return issuers
    }

    /// Trusts `iss` at `campus` with the keys of `jwks` and the revocation lists `crls`
    /// (`attest shc issuer add`), audited; replaces what the campus had for it. Only the keys'
    /// public parameters are stored (`privateDropped`: the JWKS held private ones).
    public func addIssuer(
        campus: Campus, iss: String, name: String, jwks: JSONValue, crls: [JSONValue], actor: String
    ) async throws -> (keys: Int, privateDropped: Bool) {
        guard let url = URL(string: iss), url.scheme == "https" || url.host == "localhost" || url.host == "127.0.0.1",
            iss.utf8.count <= 500, !iss.hasSuffix("/")
        else {
            throw RecordsError.invalid([.init("iss", "an issuer is its https URL, without a trailing slash, as cards name it in iss")])
        }
        guard (1...300).contains(name.count), !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw RecordsError.invalid([.init("name", "a name of 1 to 300 characters without control characters")])
        }
        let keys = try TrustedIssuer.keys(jwks: jwks)
        let (publicKeys, hadPrivate) = TrustedIssuer.publicKeys(of: jwks)
        let stored = JSONValue.object(["keys": publicKeys])
        try await client.withTransaction(campus: campus.id.rawValue) { connection in
            try await connection.query(
                """
                INSERT INTO shc_issuers (campus_id, iss, name, jwks, crls)
                VALUES (\(campus.id), \(iss), \(name), \(try PostgresJSON(encoding: stored)),
                        \(try PostgresJSON(encoding: JSONValue.array(crls))))
                ON CONFLICT (campus_id, iss) DO UPDATE SET name = EXCLUDED.name, jwks = EXCLUDED.jwks, crls = EXCLUDED.crls,
                    added_at = now()
                """)
            try await AuditLog.record(
                connection, campus: campus.id, actor: actor, action: "shc.issuer.add", target: iss,
                details: ["keys": "\(keys.count)", "revocationLists": "\(crls.count)"].merging(
                    hadPrivate ? ["privateParametersDropped": "true"] : [:], uniquingKeysWith: { first, _ in first }))
        }
        return (keys.count, hadPrivate)
    }

    /// An issuer a campus trusts by its own choice (`attest shc issuer list`).
    public struct OwnIssuer: Sendable, Equatable, Codable {
        public var iss: String
        public var name: String
        /// Its ES256 keys.
        public var keys: Int
        public var revocationLists: Int
        public var addedAt: Date
        /// The members with a dose kept from one of its cards.
        public var members: Int
    }

    /// The issuers `campus` trusts of its own (not the directory's), by `iss`.
    public func ownIssuers(campus: Campus) async throws -> [OwnIssuer] {
        try await client.query(
            """
            SELECT i.iss, i.name, i.jwks, jsonb_array_length(i.crls) AS lists, i.added_at,
                   (SELECT count(DISTINCT v.user_id) FROM vaccinations v WHERE v.campus_id = i.campus_id AND v.issuer = i.iss) AS members
            FROM shc_issuers i WHERE i.campus_id = \(campus.id) ORDER BY i.iss
            """, campus: campus.id.rawValue
        ).map { row in
            let jwks = try? JSONValue(parsing: try row.decode("jwks", as: PostgresJSON.self).bytes)
            return OwnIssuer(
                iss: try row.decode("iss"), name: try row.decode("name"),
                keys: jwks.flatMap { try? TrustedIssuer.keys(jwks: $0).count } ?? 0,
                revocationLists: try row.decode("lists"), addedAt: try row.decode("added_at"), members: try row.decode("members"))
        }
    }

    /// Stops trusting `iss` at `campus` (`attest shc issuer remove`), audited: its cards are
    /// refused from then on. The doses already verified with it stay on members' records (they
    /// were verified when presented) unless `forgettingDoses` (its key was stolen, say): then
    /// they are deleted and those members' statuses recomputed in the same transaction. Returns
    /// how many members have (or had) doses from it, or nil when the campus did not trust `iss`
    /// of its own.
    public func removeIssuer(campus: Campus, iss: String, forgettingDoses: Bool = false, actor: String) async throws -> Int? {
        let policy = RecordsPolicy(campus: campus)
        let (members, changed) = try await changingRecords(of: campus) { connection -> (Int?, Int) in
            let removed = try await connection.query(
                """
                DELETE FROM shc_issuers i WHERE i.campus_id = \(campus.id) AND i.iss = \(iss)
                RETURNING ARRAY(SELECT DISTINCT v.user_id FROM vaccinations v WHERE v.campus_id = i.campus_id AND v.issuer = i.iss
                                ORDER BY 1) AS members
                """)
            guard let row = removed.first else { return (nil, 0) }
            let members: [UUID] = try row.decode("members")
            var changed = 0
            if forgettingDoses, !members.isEmpty {
                try await connection.query("DELETE FROM vaccinations WHERE campus_id = \(campus.id) AND issuer = \(iss)")
                changed = try await Self.recompute(connection, campus: campus, users: members, policy: policy)
            }
            try await AuditLog.record(
                connection, campus: campus.id, actor: actor, action: "shc.issuer.remove", target: iss,
                details: ["membersWithDoses": "\(members.count)", "dosesForgotten": forgettingDoses ? "true" : "false"])
            return (members.count, changed)
        }
        if changed > 0 { generations?.advance(campus.id) }
        return members
    }

    /// How many issuers the VCI Directory, trusted by every campus, holds.
    public func directoryIssuers(campus: Campus) async throws -> Int {
        try await client.query("SELECT count(*) AS n FROM shc_directory", campus: campus.id.rawValue).first?.decode("n") ?? 0
    }
}
