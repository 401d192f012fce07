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
    /// What the web sign-in button says ("Google"); nil: the issuer's host.
    public var label: String?
    /// The web client the browser sign-in uses (authorization-code flow); its secret is
    /// stored sealed, apart, and never read back into this value.
    public var clientID: String?
    /// Whether a client secret is stored for `clientID` (set when read from the store).
    public var hasClientSecret: Bool = false

    public init(
        issuer: String, audiences: [String], jwksURL: String? = nil, jwks: String? = nil, allowAnyDomain: Bool = false,
        label: String? = nil, clientID: String? = nil
    ) {
        self.label = label
        self.clientID = clientID
        self.issuer = issuer
        self.audiences = audiences
        self.jwksURL = jwksURL
        self.jwks = jwks
        self.allowAnyDomain = allowAnyDomain
    }

    public static let googleIssuer = "https://accounts.google.com"
    public static let googleJWKS = "https://www.googleapis.com/oauth2/v3/certs"

    /// Google Sign-In for the given OAuth client ID(s).
    public static func google(audiences: [String], allowAnyDomain: Bool = false, clientID: String? = nil) -> OIDCIssuer {
        OIDCIssuer(
            issuer: googleIssuer, audiences: audiences, jwksURL: googleJWKS, allowAnyDomain: allowAnyDomain, label: "Google",
            clientID: clientID)
    }

    /// What the sign-in button names: the label, else the issuer's host.
    public var displayName: String { label ?? URL(string: issuer)?.host ?? issuer }

    /// Whether browsers can sign in through it: a web client with its secret.
    public var offersWebSignIn: Bool { clientID != nil && hasClientSecret }

    var isGoogle: Bool { issuer == Self.googleIssuer }

    /// Whether a token's `iss` names this issuer (Google also uses the bare host).
    func accepts(iss: String) -> Bool { iss == issuer || (isGoogle && iss == "accounts.google.com") }
}

/// The OIDC issuers of each campus (`campus_oidc_issuers`).
public struct OIDCIssuerStore: Sendable {
    let client: PostgresClient

    public init(client: PostgresClient) { self.client = client }

    /// Adds or replaces an issuer after checking it, and records it in the audit log. A web
    /// client's ID joins the audiences; its secret is sealed under `kek` (which it needs).
    public func add(campus: Campus, _ issuer: OIDCIssuer, actor: String, clientSecret: String? = nil, kek: KeyEncryptionKey? = nil)
        async throws
    {
        var issuer = issuer
        if let clientID = issuer.clientID, !issuer.audiences.contains(clientID) { issuer.audiences.append(clientID) }
        try await Self.validate(issuer)
        if clientSecret != nil, issuer.clientID == nil { throw IdentityError.noWebClient(issuer.issuer) }
        var sealed: Data?
        if let clientSecret {
            guard let kek else { throw CampusError.noKeyEncryptionKey }
            sealed = try SealedSecret.seal(
                Data(clientSecret.utf8), under: kek, context: Self.secretContext(campus: campus.id, issuer: issuer.issuer))
        }
        try await client.withTransaction(campus: campus.id.rawValue) { connection in
            try await connection.query(
                """
                INSERT INTO campus_oidc_issuers (campus_id, issuer, audiences, jwks_url, jwks, allow_any_domain, label, client_id, client_secret)
                VALUES (\(campus.id), \(issuer.issuer), \(issuer.audiences), \(issuer.jwksURL), \(issuer.jwks.map(PostgresJSON.init)),
                        \(issuer.allowAnyDomain), \(issuer.label), \(issuer.clientID), \(sealed))
                ON CONFLICT (campus_id, issuer) DO UPDATE
                SET audiences = EXCLUDED.audiences, jwks_url = EXCLUDED.jwks_url, jwks = EXCLUDED.jwks,
                    allow_any_domain = EXCLUDED.allow_any_domain, label = EXCLUDED.label, client_id = EXCLUDED.client_id,
                    client_secret = EXCLUDED.client_secret
                """)
            try await AuditLog.record(
                connection, campus: campus.id, actor: actor, action: "oidc.add", target: issuer.issuer,
                details: [
                    "audiences": issuer.audiences.joined(separator: ","), "keys": issuer.jwksURL ?? "inline",
                    "allowAnyDomain": "\(issuer.allowAnyDomain)", "webClient": issuer.clientID ?? "none",
                ])
        }
    }

    /// What a client secret is sealed for: its campus and issuer.
    static func secretContext(campus: CampusID, issuer: String) -> String { "oidc-client-secret:\(campus.rawValue.uuidString):\(issuer)" }

    /// The web client of `issuer` at `campus`: its ID and opened secret.
    public func webClient(campus: CampusID, issuer: String, kek: KeyEncryptionKey?) async throws -> (id: String, secret: String) {
        let rows = try await client.query(
            "SELECT client_id, client_secret FROM campus_oidc_issuers WHERE campus_id = \(campus) AND issuer = \(issuer)",
            campus: campus.rawValue)
        guard let row = rows.first, let id = try row.decode("client_id", as: String?.self),
            let sealed = try row.decode("client_secret", as: Data?.self)
        else { throw IdentityError.noWebClient(issuer) }
        guard let kek else { throw CampusError.noKeyEncryptionKey }
        let secret = try SealedSecret.open(sealed, with: kek, context: Self.secretContext(campus: campus, issuer: issuer))
        return (id, String(decoding: secret, as: UTF8.self))
    }

    /// The column this store seals, for `attest keys rotate-kek` (`SealedColumn`).
    public static let sealedColumns: [SealedColumn] = [
        SealedColumn(table: "campus_oidc_issuers", column: "client_secret", key: [.text("issuer")], scope: .campus) { campus, _, row in
            secretContext(campus: campus, issuer: try row.decode("issuer"))
        }
    ]

    public func list(campus: CampusID) async throws -> [OIDCIssuer] {
        let rows = try await client.query(
            """
            SELECT issuer, audiences, jwks_url, jwks, allow_any_domain, label, client_id, client_secret IS NOT NULL AS has_secret
            FROM campus_oidc_issuers WHERE campus_id = \(campus) ORDER BY issuer
            """, campus: campus.rawValue)
        return try rows.map { row in
            var issuer = OIDCIssuer(
                issuer: try row.decode("issuer"), audiences: try row.decode("audiences"), jwksURL: try row.decode("jwks_url"),
                jwks: try row.decode("jwks", as: PostgresJSON?.self)?.text, allowAnyDomain: try row.decode("allow_any_domain"),
                label: try row.decode("label"), clientID: try row.decode("client_id"))
            issuer.hasClientSecret = try row.decode("has_secret")
            return issuer
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
