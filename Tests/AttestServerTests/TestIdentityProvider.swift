import AttestTestSupport
import Crypto
import Foundation
import Hummingbird
import JWTKit
import Logging
import Synchronization
import _CryptoExtras

/// An OpenID Connect issuer for tests: its own keys, a JWKS served on loopback by a real
/// Hummingbird server (counting how often it is fetched), and ID tokens signed with jwt-kit.
///
/// It also runs the browser's authorization-code flow as a provider does: a discovery
/// document, `/authorize` (a page asking which email to sign in as, or straight back with
/// `login_hint`), and `/token`, which checks the client's credentials (Basic), the code (once,
/// for its redirect URI) and the PKCE verifier against the S256 challenge, and answers an ID
/// token carrying the nonce. Sign in once with `addES256Key(kid: "web")` published.
final class TestIdentityProvider: Sendable {
    struct Claims: JWTPayload {
        var iss: String
        var sub: String
        var aud: [String]
        var exp: Int
        var iat: Int
        var nbf: Int?
        var azp: String?
        var email: String?
        var email_verified: Bool?
        var name: String?
        var hd: String?
        var jti: String?
        var nonce: String?
        var birthdate: String? = nil
        var groups: [String]? = nil
        /// A groups claim under another name (a campus's `groups-claim`).
        var roles: [String]? = nil
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    let issuer: String
    let audience = "campus-attest-test-client"
    let signingKeys = JWTKeyCollection()
    private let published = Mutex<[JWK]>([])
    private let fetches = Atomic<Int>(0)
    private let serverTask: Task<Void, any Error>
    let jwksURL: String

    var fetchCount: Int { fetches.load(ordering: .relaxed) }

    private init(port: Int, task: Task<Void, any Error>) {
        issuer = "http://127.0.0.1:\(port)"
        jwksURL = "http://127.0.0.1:\(port)/jwks"
        serverTask = task
    }

    /// The web client the browser flow accepts.
    let webClientID = "campus-attest-web"
    let webClientSecret = "test-secret-\(UUID().uuidString)"
    /// Codes issued and not yet redeemed: what each stands for.
    struct Grant: Sendable {
        var email: String
        var nonce: String
        var challenge: String
        var redirectURI: String
        var clientID: String
    }
    let grants = Mutex<[String: Grant]>([:])
    /// The name and `birthdate` claim the web flow gives a person (their email and none otherwise).
    let profiles = Mutex<[String: (name: String, birthdate: String?)]>([:])

    func setProfile(email: String, name: String, birthdate: String?) { profiles.withLock { $0[email] = (name, birthdate) } }
    /// The `/authorize` requests received, as query dictionaries (what the server sent).
    let authorizeRequests = Mutex<[[String: String]]>([])
    /// Token requests refused, with why.
    let tokenRefusals = Mutex<[String]>([])

    static func start() async throws -> TestIdentityProvider {
        let (portStream, portContinuation) = AsyncStream<Int>.makeStream()
        let holder = Mutex<TestIdentityProvider?>(nil)
        let router = Router()
        router.get(".well-known/openid-configuration") { _, _ -> Response in
            guard let provider = holder.withLock({ $0 }) else { return Response(status: .serviceUnavailable) }
            let document: [String: Any] = [
                "issuer": provider.issuer, "authorization_endpoint": provider.issuer + "/authorize",
                "token_endpoint": provider.issuer + "/token",
                "jwks_uri": provider.jwksURL, "response_types_supported": ["code"], "code_challenge_methods_supported": ["S256"],
                "id_token_signing_alg_values_supported": ["ES256", "RS256"],
                "token_endpoint_auth_methods_supported": ["client_secret_basic"],
            ]
            return Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: document))))
        }
        router.get("authorize") { request, _ -> Response in
            guard let provider = holder.withLock({ $0 }) else { return Response(status: .serviceUnavailable) }
            var query: [String: String] = [:]
            for (name, value) in request.uri.queryParameters { query[String(name)] = String(value) }
            return provider.authorize(query)
        }
        router.post("token") { request, _ -> Response in
            guard let provider = holder.withLock({ $0 }) else { return Response(status: .serviceUnavailable) }
            let body = try await request.body.collect(upTo: 65_536)
            return try await provider.token(form: String(buffer: body), authorization: request.headers[.authorization])
        }
        router.get("jwks") { _, _ -> Response in
            guard let provider = holder.withLock({ $0 }) else { return Response(status: .serviceUnavailable) }
            provider.fetches.add(1, ordering: .relaxed)
            let keys = provider.published.withLock { $0 }
            let data = try JSONEncoder().encode(JWKS(keys: keys))
            return Response(
                status: .ok, headers: [.contentType: "application/json", .cacheControl: "public, max-age=3600"],
                body: .init(byteBuffer: ByteBuffer(bytes: data)))
        }
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in portContinuation.yield(channel.localAddress?.port ?? 0) },
            logger: {
                // Stopping it by cancellation makes the server log errors that mean nothing here.
                var logger = TestDatabase.testLogger
                logger.logLevel = .critical
                return logger
            }())
        let task = Task { try await app.runService(gracefulShutdownSignals: []) }
        var iterator = portStream.makeAsyncIterator()
        guard let port = await iterator.next() else { throw TestEnvironmentError("the test identity provider did not start") }
        let provider = TestIdentityProvider(port: port, task: task)
        holder.withLock { $0 = provider }
        return provider
    }

    func stop() { serverTask.cancel() }

    /// `/authorize`: without `login_hint`, a page asking for the email (a GET form back here
    /// with every parameter); with it, a code and a redirect to `redirect_uri`.
    func authorize(_ query: [String: String]) -> Response {
        authorizeRequests.withLock { $0.append(query) }
        guard query["response_type"] == "code", query["client_id"] == webClientID, let redirect = query["redirect_uri"],
            let state = query["state"], let nonce = query["nonce"], let challenge = query["code_challenge"],
            query["code_challenge_method"] == "S256"
        else { return Response(status: .badRequest, body: .init(byteBuffer: ByteBuffer(string: "bad authorization request"))) }
        guard let email = query["login_hint"], !email.isEmpty else {
            let hidden = query.filter { $0.key != "login_hint" }.sorted { $0.key < $1.key }.map { name, value in
                "<input type=\"hidden\" name=\"\(Self.escape(name))\" value=\"\(Self.escape(value))\">"
            }.joined()
            let page = """
                <!doctype html><html lang="en"><head><meta charset="utf-8"><title>Test identity provider</title></head><body><main>\
                <h1>Test identity provider</h1><form method="get" action="/authorize">\(hidden)\
                <label for="login_hint">Email</label> <input id="login_hint" name="login_hint" type="email">\
                <button type="submit" id="continue">Continue</button></form></main></body></html>
                """
            return Response(
                status: .ok, headers: [.contentType: "text/html; charset=utf-8"], body: .init(byteBuffer: ByteBuffer(string: page)))
        }
        let code = UUID().uuidString
        grants.withLock { $0[code] = Grant(email: email, nonce: nonce, challenge: challenge, redirectURI: redirect, clientID: webClientID) }
        var components = URLComponents(string: redirect)
        components?.queryItems = [URLQueryItem(name: "code", value: code), URLQueryItem(name: "state", value: state)]
        return Response(status: .found, headers: [.location: components?.url?.absoluteString ?? redirect])
    }

    /// `/token`: the code (once), its redirect URI, the client (Basic) and the PKCE verifier.
    func token(form: String, authorization: String?) async throws -> Response {
        var fields: [String: String] = [:]
        for pair in form.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map {
                String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? ""
            }
            if parts.count == 2 { fields[parts[0]] = parts[1] }
        }
        func refuse(_ reason: String) -> Response {
            tokenRefusals.withLock { $0.append(reason) }
            return Response(
                status: .badRequest, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(string: #"{"error":"invalid_grant","error_description":"\#(reason)"}"#)))
        }
        let expected = "Basic " + Data("\(webClientID):\(webClientSecret)".utf8).base64EncodedString()
        guard authorization == expected else { return refuse("client authentication failed") }
        guard fields["grant_type"] == "authorization_code", let code = fields["code"] else { return refuse("no code") }
        guard let grant = grants.withLock({ $0.removeValue(forKey: code) }) else { return refuse("unknown or used code") }
        guard fields["redirect_uri"] == grant.redirectURI else { return refuse("redirect_uri differs") }
        guard let verifier = fields["code_verifier"], Data(SHA256.hash(data: Data(verifier.utf8))).base64URL == grant.challenge else {
            return refuse("PKCE verifier does not match")
        }
        let profile = profiles.withLock { $0[grant.email] }
        var granted = claims(email: grant.email, name: profile?.name ?? grant.email, audience: [webClientID], nonce: grant.nonce)
        granted.birthdate = profile?.birthdate
        let idToken = try await sign(granted, kid: "web")
        let body = try JSONSerialization.data(withJSONObject: [
            "id_token": idToken, "token_type": "Bearer", "access_token": "unused", "expires_in": 600,
        ])
        return Response(
            status: .ok, headers: [.contentType: "application/json", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "\"", with: "&quot;").replacingOccurrences(
            of: "<", with: "&lt;")
    }

    /// Makes a new ES256 key; `publish` puts it in the served JWKS.
    @discardableResult
    func addES256Key(kid: String, publish: Bool = true) async throws -> ES256PrivateKey {
        let key = ES256PrivateKey()
        await signingKeys.add(ecdsa: key, kid: JWKIdentifier(string: kid))
        if publish {
            publicPEM.withLock { $0[kid] = key.publicKey.pemRepresentation }
            guard let parameters = key.publicKey.parameters else { throw TestEnvironmentError("an ES256 key without parameters") }
            let jwk = JWK.ecdsa(.es256, identifier: JWKIdentifier(string: kid), x: parameters.x, y: parameters.y, curve: .p256)
            published.withLock { $0.append(jwk) }
        }
        return key
    }

    /// The PEM of each published key's public half, by key id: what an attacker who
    /// fetched the JWKS holds.
    let publicPEM = Mutex<[String: String]>([:])

    /// Makes a new RS256 key (2048 bits) and publishes it.
    func addRS256Key(kid: String) async throws {
        let key = try Insecure.RSA.PrivateKey(backing: _RSA.Signing.PrivateKey(keySize: .bits2048))
        await signingKeys.add(rsa: key, digestAlgorithm: .sha256, kid: JWKIdentifier(string: kid))
        publicPEM.withLock { $0[kid] = key.publicKey.pemRepresentation }
        let (modulus, exponent) = try key.publicKey.getKeyPrimitives()
        let jwk = JWK.rsa(
            .rs256, identifier: JWKIdentifier(string: kid), modulus: modulus.base64URL, exponent: exponent.base64URL)
        published.withLock { $0.append(jwk) }
    }

    /// Replaces the served key set with only `kid`'s key.
    func publishOnly(kid: String) {
        published.withLock { keys in keys = keys.filter { $0.keyIdentifier?.string == kid } }
    }

    func claims(
        email: String, subject: String? = nil, name: String? = "Test Person", audience: [String]? = nil,
        expiresIn: Int = 600, issuedAgo: Int = 5, notBeforeIn: Int? = nil, emailVerified: Bool? = true, hd: String? = nil,
        issuer: String? = nil, jti: String? = UUID().uuidString, nonce: String? = nil
    ) -> Claims {
        let now = Int(Date().timeIntervalSince1970)
        return Claims(
            iss: issuer ?? self.issuer, sub: subject ?? "sub-\(email)", aud: audience ?? [self.audience], exp: now + expiresIn,
            iat: now - issuedAgo, nbf: notBeforeIn.map { now + $0 }, azp: nil, email: email, email_verified: emailVerified,
            name: name, hd: hd, jti: jti, nonce: nonce)
    }

    func sign(_ claims: Claims, kid: String) async throws -> String {
        try await signingKeys.sign(claims, kid: JWKIdentifier(string: kid))
    }

    /// A token with `alg` in its header and no valid signature (for `none`, HS256 …).
    static func forged(_ claims: Claims, alg: String, kid: String, signature: String = "") throws -> String {
        let header = try JSONSerialization.data(withJSONObject: ["alg": alg, "kid": kid, "typ": "JWT"])
        let payload = try JSONEncoder().encode(claims)
        return header.base64URL + "." + payload.base64URL + "." + signature
    }

    /// The algorithm-confusion attack: an HS256 token whose HMAC is keyed with the bytes of
    /// the issuer's public key (its PEM), which a verifier that takes `alg` from the token
    /// and the key from the JWKS would accept.
    func confused(_ claims: Claims, kid: String) throws -> String {
        guard let pem = publicPEM.withLock({ $0[kid] }) else { throw TestEnvironmentError("no published key \(kid)") }
        let unsigned = try Self.forged(claims, alg: "HS256", kid: kid).dropLast()  // header.payload
        let mac = HMAC<SHA256>.authenticationCode(for: Data(unsigned.utf8), using: SymmetricKey(data: Data(pem.utf8)))
        return unsigned + "." + Data(mac).base64URL
    }
}

extension Data {
    var base64URL: String {
        base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
