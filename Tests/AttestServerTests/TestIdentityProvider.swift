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

    static func start() async throws -> TestIdentityProvider {
        let (portStream, portContinuation) = AsyncStream<Int>.makeStream()
        let holder = Mutex<TestIdentityProvider?>(nil)
        let router = Router()
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
        publicPEM.withLock { $0[kid] = try? key.publicKey.pemRepresentation }
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
