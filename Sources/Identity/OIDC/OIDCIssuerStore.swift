import AttestPlugins
import AttestPostgres
import Foundation
import JWTKit
import Tenancy

/// An OpenID Connect issuer a campus accepts ID tokens from.
public struct OIDCIssuer: Sendable, Codable, Equatable {
    /// The exact `iss` of its tokens.
    public var issuer: String
    /// Client IDs the tokens must be issued to (`aud`).
    public var audiences: [String]
    /// Where its signing keys are published (fetched and cached).
    public var jwksURL: String?
    /// Or its keys, given inline (from `--jwks-file`), never fetched.
    public var jwks: String?
    /// Whether its accounts of any email domain may sign in at a campus that lists no
    /// domains (`--allow-any-domain`). Without it such a campus admits nobody through it.
    public var allowAnyDomain: Bool

    public init(issuer: String, audiences: [String], jwksURL: String? = nil, jwks: String? = nil, allowAnyDomain: Bool = false) {
        self.issuer = issuer
        self.audiences = audiences
        self.jwksURL = jwksURL
        self.jwks = jwks
        self.allowAnyDomain = allowAnyDomain
    }

    public static let googleIssuer = "https://accounts.google.com"
    public static let googleJWKS = "https://www.googleapis.com/oauth2/v3/certs"

    /// Google Sign-In for the given OAuth client ID(s).
    public static func google(audiences: [String], allowAnyDomain: Bool = false) -> OIDCIssuer {
        OIDCIssuer(issuer: googleIssuer, audiences: audiences, jwksURL: googleJWKS, allowAnyDomain: allowAnyDomain)
    }

    var isGoogle: Bool { issuer == Self.googleIssuer }

    /// Whether a token's `iss` names this issuer (Google also uses the bare host).
    func accepts(iss: String) -> Bool { iss == issuer || (isGoogle && iss == "accounts.google.com") }
}


/// The OIDC issuers of each campus (`campus_oidc_issuers`).
public struct OIDCIssuerStore: Sendable {
    let client: PostgresClient

    public init(client: PostgresClient) { self.client = client }

    /// Adds or replaces an issuer after checking it, and records it in the audit log.
    public func add(campus: Campus, _ issuer: OIDCIssuer, actor: String) async throws {
        try await Self.validate(issuer)
        try await client.withTransaction(campus: campus.id.rawValue) { connection in
            try await connection.query(
                """
                INSERT INTO campus_oidc_issuers (campus_id, issuer, audiences, jwks_url, jwks, allow_any_domain)
                VALUES (\(campus.id), \(issuer.issuer), \(issuer.audiences), \(issuer.jwksURL), \(issuer.jwks.map(PostgresJSON.init)),
                        \(issuer.allowAnyDomain))
                ON CONFLICT (campus_id, issuer) DO UPDATE
                SET audiences = EXCLUDED.audiences, jwks_url = EXCLUDED.jwks_url, jwks = EXCLUDED.jwks,
                    allow_any_domain = EXCLUDED.allow_any_domain
                """)
            try await AuditLog.record(
                connection, campus: campus.id, actor: actor, action: "oidc.add", target: issuer.issuer,
                details: [
                    "audiences": issuer.audiences.joined(separator: ","), "keys": issuer.jwksURL ?? "inline",
                    "allowAnyDomain": "\(issuer.allowAnyDomain)",
                ])
        }
    }

    public func list(campus: CampusID) async throws -> [OIDCIssuer] {
        let rows = try await client.query(
            """
            SELECT issuer, audiences, jwks_url, jwks, allow_any_domain FROM campus_oidc_issuers
            WHERE campus_id = \(campus) ORDER BY issuer
            """, campus: campus.rawValue)
        return try rows.map { row in
            OIDCIssuer(
                issuer: try row.decode("issuer"), audiences: try row.decode("audiences"), jwksURL: try row.decode("jwks_url"),
                jwks: try row.decode("jwks", as: PostgresJSON?.self)?.text, allowAnyDomain: try row.decode("allow_any_domain"))
        }
    }

    public func remove(campus: Campus, issuer: String, actor: String) async throws {
        try await client.withTransaction(campus: campus.id.rawValue) { connection in
            let removed = try await connection.query(
                "DELETE FROM campus_oidc_issuers WHERE campus_id = \(campus.id) AND issuer = \(issuer)")
            guard removed.affectedRows > 0 else { throw IdentityError.notConfigured(issuer) }
            try await AuditLog.record(connection, campus: campus.id, actor: actor, action: "oidc.remove", target: issuer)
        }
    }

    static func validate(_ issuer: OIDCIssuer) async throws {
        guard isAcceptableURL(issuer.issuer) else { throw IdentityError.invalidURL(field: "--issuer", value: issuer.issuer) }
        guard !issuer.audiences.isEmpty, issuer.audiences.allSatisfy({ !$0.isEmpty }) else { throw IdentityError.noAudience }
        switch (issuer.jwksURL, issuer.jwks) {
        case (let url?, nil):
            guard isAcceptableURL(url) else { throw IdentityError.invalidURL(field: "--jwks-url", value: url) }
        case (nil, let jwks?):
            let parsed: (keys: KeySet, rejected: [String])
            do {
                parsed = try await KeySet.parse(Data(jwks.utf8))
            } catch {
                throw IdentityError.invalidJWKS("it is not JSON of the form {\"keys\": [...]}")
            }
            guard parsed.rejected.isEmpty else {
                throw IdentityError.invalidJWKS(
                    "\(parsed.rejected.joined(separator: ", ")) cannot verify RS256 or ES256 signatures")
            }
            guard parsed.keys.count > 0 else { throw IdentityError.invalidJWKS("it holds no keys") }
        default:
            throw IdentityError.keysNeeded
        }
    }

    /// https, or http to this machine (development and tests).
    static func isAcceptableURL(_ text: String) -> Bool { OutboundURL.parse(text) != nil }
}
