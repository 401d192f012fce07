import AttestFoundation
import AttestPlugins
import Crypto
import Foundation
import JWTKit
import Logging
import Tenancy

/// Who an ID token says signed in, after every check passed.
public struct VerifiedIdentity: Sendable, Equatable {
    public var issuer: String
    public var subject: String
    /// Lower-cased, verified by the issuer.
    public var email: String
    public var name: String?
    /// Google's hosted domain (`hd`), when present.
    public var hostedDomain: String?
    /// The `birthdate` claim when it is a whole date (OpenID Connect Core §5.1 allows a year
    /// alone, or `0000` for one withheld: those are not kept).
    public var birthDate: LocalDate?
    /// The groups the campus's groups claim (`groups-claim`, `groups` by default) named: nil
    /// when the token has no such claim (nothing is changed then), names of groups else.
    public var groups: [String]?
    /// What names this one token (SHA-256 of the issuer and its `jti`, or of the whole token
    /// when it has none), and its expiry: a token signs in once (`SignInGuard`).
    public var tokenID: Data
    public var expiresAt: Date

    public init(
        issuer: String, subject: String, email: String, name: String? = nil, hostedDomain: String? = nil, birthDate: LocalDate? = nil,
        groups: [String]? = nil, tokenID: Data = Data(count: 32), expiresAt: Date = .distantFuture
    ) {
        self.birthDate = birthDate
        self.groups = groups
        self.issuer = issuer
        self.subject = subject
        self.email = email
        self.name = name
        self.hostedDomain = hostedDomain
        self.tokenID = tokenID
        self.expiresAt = expiresAt
    }

    /// The most groups kept of a token's groups claim.
    public static let maxGroups = 500

    /// The groups claim `claim` of a verified payload: its strings (at most `maxGroups`, each
    /// 1 to 300 characters; others ignored), nil when the payload has no such array.
    static func claimedGroups(_ payload: Data, claim: String) -> [String]? {
        guard case .array(let items)? = (try? JSONValue(parsing: payload))?[claim] else { return nil }
        var groups: [String] = []
        for case .string(let name) in items where (1...300).contains(name.unicodeScalars.count) && groups.count < maxGroups {
            if !groups.contains(name) { groups.append(name) }
        }
        return groups.sorted()
    }

    /// A `birthdate` claim as kept: a whole `YYYY-MM-DD` date from 1900 on, else nil.
    public static func birthDate(_ claim: String) -> LocalDate? {
        guard claim.utf8.count == 10, let date = LocalDate(claim), date.year >= 1900, date.description == claim else { return nil }
        return date
    }

    /// The longest display name kept, in Unicode scalars (PostgreSQL counts characters so).
    public static let maxNameScalars = 200

    /// A name from an identity provider as it is stored: control characters (NUL, line
    /// breaks, escapes) and line or paragraph separators dropped, spaces at the ends trimmed,
    /// then cut to `maxNameScalars` scalars. Nil when nothing is left.
    public static func displayName(_ raw: String) -> String? {
        var scalars = String.UnicodeScalarView()
        for scalar in raw.unicodeScalars {
            switch scalar.properties.generalCategory {
            case .control, .lineSeparator, .paragraphSeparator, .surrogate, .unassigned: continue
            default: scalars.append(scalar)
            }
        }
        let trimmed = String(scalars).trimmingCharacters(in: .whitespaces)
        let cut = String(String.UnicodeScalarView(trimmed.unicodeScalars.prefix(maxNameScalars)))
        return cut.isEmpty ? nil : cut
    }
}

/// Verifies OpenID Connect ID tokens for a campus: signature against the issuer's JWKS
/// (RS256 or ES256 only; `none`, HS* and anything else refused before any key is touched),
/// `iss`, `aud` (and `azp` when there are several audiences), `exp`/`nbf`/`iat` with a
/// leeway, `email_verified`, and the campus's email domains (and Google's `hd`).
public struct IDTokenVerifier: Sendable {
    let keys: JWKSCache
    /// Clock skew tolerated on `exp`, `nbf` and `iat`. Default 60 s.
    let leeway: TimeInterval

    public init(keys: JWKSCache, leeway: TimeInterval = 60) {
        self.keys = keys
        self.leeway = leeway
    }

    struct Header: Decodable {
        var alg: String?
        var kid: String?
    }

    struct Claims: JWTPayload {
        var iss: String
        var sub: String
        var aud: Audience
        var exp: Double
        var nbf: Double?
        var iat: Double?
        var azp: String?
        var email: String?
        var email_verified: Flag?
        var name: String?
        var hd: String?
        var birthdate: String?
        var jti: String?
        var nonce: String?

        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    /// What is read of a token before its signature is checked: which issuer's keys to use.
    struct UnverifiedIssuer: Decodable {
        var iss: String
    }

    /// `aud` is a string or an array of strings.
    struct Audience: Codable, Sendable {
        var values: [String]
        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let single = try? container.decode(String.self) { values = [single] } else { values = try container.decode([String].self) }
        }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(values)
        }
    }

    /// `email_verified` is a boolean, or (some issuers) the string "true".
    struct Flag: Codable, Sendable {
        var value: Bool
        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let bool = try? container.decode(Bool.self) { value = bool } else { value = (try? container.decode(String.self)) == "true" }
        }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(value)
        }
    }

    /// Checks `idToken` for `campus`. With `nonce` (a sign-in the server started, as the
    /// browser's is), the token must carry exactly that nonce.
    public func verify(
        idToken: String, campus: Campus, issuers: [OIDCIssuer], nonce expectedNonce: String? = nil, now: Date = Date()
    ) async throws -> VerifiedIdentity {
        let parts = idToken.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, idToken.utf8.count < 16_384,
            let headerData = Data(base64URLEncoded: parts[0]), let payloadData = Data(base64URLEncoded: parts[1]),
            let header = try? JSONDecoder().decode(Header.self, from: headerData),
            let unverified = try? JSONDecoder().decode(UnverifiedIssuer.self, from: payloadData)
        else { throw IdentityError.malformed }
        guard let alg = header.alg, alg == "RS256" || alg == "ES256" else {
            throw IdentityError.unsupportedAlgorithm(header.alg ?? "none")
        }
        guard let issuer = issuers.first(where: { $0.accepts(iss: unverified.iss) }) else {
            throw IdentityError.issuerNotAccepted(unverified.iss)
        }
        var keySet = try await keySet(for: issuer, refreshing: false)
        if let kid = header.kid, !keySet.keyIDs.contains(kid), issuer.jwksURL != nil {
            keySet = try await self.keySet(for: issuer, refreshing: true)
        }
        if let kid = header.kid {
            guard keySet.keyIDs.contains(kid) else { throw IdentityError.unknownKey }
        } else {
            // Without a key id only a single-key set is unambiguous.
            guard keySet.count == 1 else { throw IdentityError.unknownKey }
        }
        let claims: Claims
        do {
            claims = try await keySet.collection.verify(idToken, as: Claims.self)
        } catch {
            throw IdentityError.badSignature
        }
        let accepted = Set(issuer.audiences)
        guard claims.aud.values.contains(where: accepted.contains) else { throw IdentityError.wrongAudience }
        if claims.aud.values.count > 1, let azp = claims.azp, !accepted.contains(azp) { throw IdentityError.wrongAudience }
        let time = now.timeIntervalSince1970
        guard claims.exp + leeway > time else { throw IdentityError.expired }
        if let nbf = claims.nbf, nbf - leeway > time { throw IdentityError.notYetValid }
        if let iat = claims.iat, iat - leeway > time { throw IdentityError.issuedInTheFuture }
        guard let rawEmail = claims.email, let email = UserStore.normalizedEmail(rawEmail) else { throw IdentityError.emailMissing }
        guard claims.email_verified?.value == true else { throw IdentityError.emailNotVerified }
        if let expectedNonce, claims.nonce != expectedNonce { throw IdentityError.nonceMismatch }
        let domain = String(email.drop { $0 != "@" }.dropFirst())
        if campus.emailDomains.isEmpty {
            guard issuer.allowAnyDomain else { throw IdentityError.noDomainAllowed }
        } else {
            guard campus.emailDomains.contains(domain) else { throw IdentityError.domainNotAllowed(domain) }
            // A Google account of the campus's Workspace carries hd; a consumer account does not.
            if issuer.isGoogle || claims.hd != nil {
                guard let hd = claims.hd?.lowercased(), campus.emailDomains.contains(hd) else {
                    throw IdentityError.domainNotAllowed(claims.hd ?? domain)
                }
            }
        }
        // One token, one sign-in: named by its jti where the issuer gives one.
        let tokenID = Data(SHA256.hash(data: Data((claims.jti.map { "\(issuer.issuer)\n\($0)" } ?? idToken).utf8)))
        return VerifiedIdentity(
            issuer: issuer.issuer, subject: claims.sub, email: email, name: claims.name.flatMap(VerifiedIdentity.displayName),
            hostedDomain: claims.hd, birthDate: claims.birthdate.flatMap(VerifiedIdentity.birthDate),
            groups: VerifiedIdentity.claimedGroups(payloadData, claim: DirectoryPolicy(campus: campus).groupsClaim), tokenID: tokenID,
            expiresAt: Date(timeIntervalSince1970: min(claims.exp + leeway, 4_102_444_800)))
    }

    private func keySet(for issuer: OIDCIssuer, refreshing: Bool) async throws -> KeySet {
        if let inline = issuer.jwks {
            do { return try await keys.inlineKeys(inline) } catch { throw IdentityError.keysUnavailable("\(error)") }
        }
        guard let url = issuer.jwksURL else { throw IdentityError.keysUnavailable("no key set configured") }
        return refreshing ? try await keys.keysAfterUnknownKey(url: url) : try await keys.keys(url: url)
    }
}
