import AttestFoundation
import AttestPlugins
import Crypto
import Foundation
import Tenancy

/// The browser's sign-in with a campus's identity provider: the OpenID Connect
/// authorization-code flow with PKCE (S256), `state` and `nonce`.
///
/// `start` finds the provider's endpoints (`/.well-known/openid-configuration`, cached for
/// an hour), registers a nonce (good once, ten minutes) and returns where to send the
/// browser with what it must bring back. `finish` exchanges the code (with the PKCE verifier
/// and the client secret, `client_secret_basic`) at the token endpoint and signs in with the
/// ID token exactly as the API's sign-in does, plus the nonce.
public struct BrowserSignIn: Sendable {
    let issuers: OIDCIssuerStore
    let guardian: SignInGuard
    let signIn: SignInService
    let http: any PluginHTTPClient
    let kek: KeyEncryptionKey?
    let documents = ExpiringCache<String, Endpoints>(ttl: .seconds(3_600), limit: 1_000)

    public init(issuers: OIDCIssuerStore, guardian: SignInGuard, signIn: SignInService, http: any PluginHTTPClient, kek: KeyEncryptionKey?)
    {
        (self.issuers, self.guardian, self.signIn, self.http, self.kek) = (issuers, guardian, signIn, http, kek)
    }

    struct Endpoints: Sendable {
        var authorization: URL
        var token: URL
    }

    /// What the browser carries from `start` to `finish` (in a short-lived cookie): the
    /// issuer, `state`, the PKCE verifier and the nonce.
    public struct Pending: Sendable, Equatable {
        public var issuer: String
        public var state: String
        public var verifier: String
        public var nonce: String

        public init(issuer: String, state: String, verifier: String, nonce: String) {
            (self.issuer, self.state, self.verifier, self.nonce) = (issuer, state, verifier, nonce)
        }

        /// `state.verifier.nonce.base64url(issuer)`.
        public var encoded: String { [state, verifier, nonce, Data(issuer.utf8).base64URLEncoded()].joined(separator: ".") }

        public init?(encoded text: String) {
            let parts = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 4, parts.prefix(3).allSatisfy(SessionStore.isWellFormed),
                let issuerData = Data(base64URLEncoded: parts[3]), let issuer = String(data: issuerData, encoding: .utf8), !issuer.isEmpty
            else { return nil }
            self.init(issuer: issuer, state: parts[0], verifier: parts[1], nonce: parts[2])
        }
    }

    /// The issuers of `campus` a browser can sign in with.
    public func providers(campus: CampusID) async throws -> [OIDCIssuer] {
        try await issuers.list(campus: campus).filter(\.offersWebSignIn)
    }

    /// Where to send the browser (the provider's authorization endpoint with every
    /// parameter), and what it must come back with.
    public func start(campus: Campus, issuer: String, redirectURI: String) async throws -> (url: URL, pending: Pending) {
        guard let entry = try await issuers.list(campus: campus.id).first(where: { $0.issuer == issuer }), entry.offersWebSignIn,
            let clientID = entry.clientID
        else { throw IdentityError.noWebClient(issuer) }
        let endpoints = try await self.endpoints(issuer)
        let nonce = try await guardian.issueNonce(campus: campus.id).nonce
        let pending = Pending(issuer: issuer, state: SessionStore.newToken(), verifier: SessionStore.newToken(), nonce: nonce)
        let challenge = Data(SHA256.hash(data: Data(pending.verifier.utf8))).base64URLEncoded()
        guard var components = URLComponents(url: endpoints.authorization, resolvingAgainstBaseURL: false) else {
            throw IdentityError.providerFailed("its authorization endpoint is not a URL")
        }
        components.queryItems =
            (components.queryItems ?? []) + [
                URLQueryItem(name: "response_type", value: "code"), URLQueryItem(name: "client_id", value: clientID),
                URLQueryItem(name: "redirect_uri", value: redirectURI), URLQueryItem(name: "scope", value: "openid email profile"),
                URLQueryItem(name: "state", value: pending.state), URLQueryItem(name: "nonce", value: pending.nonce),
                URLQueryItem(name: "code_challenge", value: challenge), URLQueryItem(name: "code_challenge_method", value: "S256"),
            ]
        guard let url = components.url else { throw IdentityError.providerFailed("its authorization endpoint is not a URL") }
        return (url, pending)
    }

    /// Completes the sign-in the browser came back from: checks `state`, exchanges `code`,
    /// and signs in with the ID token and the nonce (spent here, once).
    public func finish(
        campus: Campus, pending: Pending, state: String, code: String, redirectURI: String
    ) async throws -> (token: String, expiresAt: Date, user: User) {
        guard SessionStore.isWellFormed(state), state.utf8.elementsEqual(pending.state.utf8) else {
            throw IdentityError.signInAbandoned("the browser came back with another sign-in's state; start again")
        }
        guard !code.isEmpty, code.utf8.count <= 2_048 else { throw IdentityError.signInAbandoned("the provider sent no code") }
        let client = try await issuers.webClient(campus: campus.id, issuer: pending.issuer, kek: kek)
        let endpoints = try await self.endpoints(pending.issuer)
        let form = [
            ("grant_type", "authorization_code"), ("code", code), ("redirect_uri", redirectURI), ("code_verifier", pending.verifier),
        ].map { "\($0.0)=\(Self.formEscape($0.1))" }.joined(separator: "&")
        let credentials = Data((Self.formEscape(client.id) + ":" + Self.formEscape(client.secret)).utf8).base64EncodedString()
        let response: PluginHTTPResponse
        do {
            response = try await http.send(
                PluginHTTPRequest(
                    method: "POST", url: endpoints.token,
                    headers: [
                        ("Content-Type", "application/x-www-form-urlencoded"), ("Accept", "application/json"),
                        ("Authorization", "Basic " + credentials),
                    ],
                    body: Data(form.utf8), timeout: .seconds(10)))
        } catch {
            throw IdentityError.providerFailed("its token endpoint did not answer (\(error))")
        }
        let body = (try? JSONSerialization.jsonObject(with: response.body)) as? [String: Any]
        guard response.status == 200, let idToken = body?["id_token"] as? String, !idToken.isEmpty else {
            let reason = (body?["error"] as? String).map { String($0.prefix(100)) } ?? "HTTP \(response.status)"
            throw IdentityError.providerFailed("its token endpoint refused the code (\(reason))")
        }
        return try await signIn.signIn(campus: campus, idToken: idToken, nonce: pending.nonce)
    }

    /// The provider's endpoints from its discovery document, which must name the same issuer.
    func endpoints(_ issuer: String) async throws -> Endpoints {
        try await documents.value(for: issuer) {
            var base = issuer
            while base.hasSuffix("/") { base.removeLast() }
            guard let url = OutboundURL.parse(base + "/.well-known/openid-configuration") else {
                throw IdentityError.providerFailed("the issuer \(issuer) is not an https URL")
            }
            let response: PluginHTTPResponse
            do {
                response = try await http.send(
                    PluginHTTPRequest(url: url, headers: [("Accept", "application/json")], timeout: .seconds(10)))
            } catch {
                throw IdentityError.providerFailed("its discovery document could not be fetched (\(error))")
            }
            guard response.status == 200, let document = (try? JSONSerialization.jsonObject(with: response.body)) as? [String: Any] else {
                throw IdentityError.providerFailed("its discovery document answered HTTP \(response.status)")
            }
            guard (document["issuer"] as? String).map({ $0 == issuer || $0 == base }) == true else {
                throw IdentityError.providerFailed("its discovery document names another issuer")
            }
            guard let authorization = (document["authorization_endpoint"] as? String).flatMap(OutboundURL.parse),
                let token = (document["token_endpoint"] as? String).flatMap(OutboundURL.parse)
            else { throw IdentityError.providerFailed("its discovery document lacks https authorization and token endpoints") }
            return Endpoints(authorization: authorization, token: token)
        }
    }

    static func formEscape(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? ""
    }
    private static let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
}
