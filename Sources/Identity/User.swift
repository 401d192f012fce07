import AttestPlugins
import AttestPostgres
import Foundation

/// A person at one campus. The same email at two campuses is two users.
public struct User: Sendable, Codable, Equatable {
    public var id: UserID
    public var campusID: CampusID
    public var email: String
    public var displayName: String
    public var roles: [Role]
    public var createdAt: Date
    /// The health status recomputed from the member's record (Records), nil when they have none.
    public var health: HealthStatus? = nil
}

extension HealthStatus {
    /// The status as `member_health` keeps it; nil for none (or a value no longer readable,
    /// which the next change to the record replaces).
    public static func stored(_ json: PostgresJSON?) -> HealthStatus? {
        guard let json else { return nil }
        return try? json.decode(as: HealthStatus.self)
    }
}

/// Why an Identity use case failed (users, roles, issuers, sign-in): the module's one error
/// vocabulary. Each description says what is wrong and how to mend it; a sign-in refusal's
/// names the check that failed, never the token.
public enum IdentityError: Error, Equatable, CustomStringConvertible {
    // MARK: Users and roles
    case invalidEmail(String)
    case emailDomainNotAllowed(email: String, allowed: [String])
    case userExists(String)
    /// Another member of the campus has this campus id.
    case memberIDTaken(String)
    case userNotFound(String)
    case unknownRole(String)
    case memberRoleIsPermanent
    case invalidDisplayName
    case importFailed(line: Int, reason: String)
    case invalidTTL(String)
    /// A directory group's name or externalId that cannot be mapped (empty, or too long).
    case invalidGroupName(String)

    // MARK: Issuers
    case invalidURL(field: String, value: String)
    case noAudience
    case keysNeeded
    case invalidJWKS(String)
    case notConfigured(String)

    // MARK: Sign-in refusals
    /// The campus accepts no issuer yet.
    case noIssuer
    case malformed
    case unsupportedAlgorithm(String)
    case issuerNotAccepted(String)
    case unknownKey
    case badSignature
    case wrongAudience
    case expired
    case notYetValid
    case issuedInTheFuture
    case emailMissing
    case emailNotVerified
    case domainNotAllowed(String)
    case noDomainAllowed
    case nonceMismatch
    case replayed
    case keysUnavailable(String)
    case identityConflict
    /// An operator deactivated the account (`attest user deactivate`).
    case deactivated
    /// The campus admits only users its directory provisioned (`provisioning: scim-only`).
    case notProvisioned
    /// The issuer has no web client (client ID and secret) for the browser sign-in.
    case noWebClient(String)
    /// The issuer's discovery document or token endpoint failed; what went wrong.
    case providerFailed(String)
    /// The browser came back without the sign-in this server started (state), or with the
    /// provider's refusal.
    case signInAbandoned(String)

    /// Whether this refuses a sign-in (an ID token or the campus's issuers), as opposed to an
    /// operator's request.
    public var refusesSignIn: Bool {
        switch self {
        case .noIssuer, .malformed, .unsupportedAlgorithm, .issuerNotAccepted, .unknownKey, .badSignature, .wrongAudience, .expired,
            .notYetValid, .issuedInTheFuture, .emailMissing, .emailNotVerified, .domainNotAllowed, .noDomainAllowed, .nonceMismatch,
            .replayed, .keysUnavailable, .identityConflict, .deactivated, .notProvisioned, .providerFailed, .signInAbandoned:
            true
        default: false
        }
    }

    /// The description without the email address some carry: what a log may hold.
    public var logReason: String {
        switch self {
        case .invalidEmail: "invalid email address"
        case .emailDomainNotAllowed: "the email address is not in the campus's email domains"
        case .userExists: "a user with that email address already exists"
        case .userNotFound: "no user with that email address"
        case .importFailed(let line, _): "line \(line) of an import was refused"
        default: description
        }
    }

    public var description: String {
        switch self {
        case .invalidEmail(let email):
            "invalid email address \"\(email)\": use name@domain, such as alice@example.edu"
        case .emailDomainNotAllowed(let email, let allowed):
            "\(email) is not in this campus's email domains (\(allowed.joined(separator: ", "))): "
                + "use an address there, or add the domain with `attest campus set <campus> email-domains …`"
        case .userExists(let email):
            "a user with email \(email) already exists at this campus"
        case .memberIDTaken(let id):
            "another member of this campus has the campus id \(id): check it, or clear theirs first"
        case .userNotFound(let email):
            "no user with email \(email) at this campus: add them with `attest user add`, or check `attest user list`"
        case .unknownRole(let role):
            "unknown role \"\(role)\": use one of \(Role.allCases.map(\.rawValue).joined(separator: ", "))"
        case .memberRoleIsPermanent:
            "every user is a member; the member role cannot be granted or revoked"
        case .invalidDisplayName:
            "the display name must be at most 200 characters, without control characters (line breaks, tabs, NUL)"
        case .importFailed(let line, let reason):
            "line \(line): \(reason); nothing was imported"
        case .invalidGroupName(let name):
            "\"\(name)\" is not a group's name: give its displayName or externalId, 1 to 300 characters"
        case .invalidTTL(let text):
            "invalid --ttl \"\(text)\": use a duration such as 90m, 12h or 30d (at most 366d)"
        case .invalidURL(let field, let value):
            "invalid \(field) \"\(value)\": use an https:// URL (http:// only for 127.0.0.1 or localhost)"
        case .noAudience: "give at least one --audience (the OAuth client ID the tokens are issued to)"
        case .keysNeeded: "give exactly one of --jwks-url and --jwks-file (or --google)"
        case .invalidJWKS(let reason): "the JWKS file is not a usable key set: \(reason)"
        case .notConfigured(let issuer): "issuer \(issuer) is not configured for this campus: `attest campus oidc list` shows them"
        case .noIssuer: "this campus accepts no sign-in provider yet; an operator adds one with `attest campus oidc add`"
        case .malformed: "the ID token is not a well-formed JWT"
        case .unsupportedAlgorithm(let alg): "the ID token's algorithm \(alg) is not accepted (RS256 or ES256 only)"
        case .issuerNotAccepted(let issuer): "tokens from issuer \(issuer) are not accepted at this campus"
        case .unknownKey: "the ID token is signed with a key its issuer does not publish"
        case .badSignature: "the ID token's signature does not verify"
        case .wrongAudience: "the ID token was issued to another client (aud)"
        case .expired: "the ID token has expired; sign in again"
        case .notYetValid: "the ID token is not valid yet (nbf)"
        case .issuedInTheFuture: "the ID token's issue time is in the future (iat); check the clocks"
        case .emailMissing: "the ID token carries no email address"
        case .emailNotVerified: "the email address is not verified by the issuer"
        case .domainNotAllowed(let domain): "accounts of \(domain) cannot sign in at this campus"
        case .noDomainAllowed:
            "this campus admits no email domain yet: an operator lists them with `attest campus set SLUG email-domains …`, or admits any with `attest campus oidc add … --allow-any-domain`"
        case .nonceMismatch: "the ID token's nonce is not the one this sign-in was started with, or it was used already; start again"
        case .replayed: "this ID token was used to sign in already; sign in again for a new one"
        case .keysUnavailable: "the issuer's signing keys cannot be fetched right now; retry shortly"
        case .identityConflict: "this email address is already linked to another sign-in identity at this campus"
        case .deactivated: "this account is deactivated at this campus: ask the campus's IT team to reactivate it"
        case .notProvisioned:
            "this campus admits only people its university directory provisioned, and the directory has not provisioned you: "
                + "ask the campus's IT team to add you to the directory's Campus Attest application"
        case .noWebClient(let issuer):
            "issuer \(issuer) has no web client for the browser sign-in: add it again with --client-id and --client-secret-file"
        case .providerFailed(let reason): "the sign-in provider could not be used: \(reason)"
        case .signInAbandoned(let reason): "the sign-in was not completed: \(reason)"
        }
    }
}
