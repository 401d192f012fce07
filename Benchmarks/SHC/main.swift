import AttestFoundation
import AttestPlugins
import Crypto
import Foundation
import Records

// Benchmarks/records' SMART Health Card half (DESIGN.md §8, issue 63): the server's whole
// verification of the specification's example card as a member presents it (`shc:/` digits
// decoded, the JWS split, its payload inflated and parsed, ES256 checked with the issuer's key
// by kid, nbf, revocation, the FHIR bundle's patient and doses read) against a bare ES256
// verification of the same JWS (its signature decoded and checked over header.payload with
// the same key), one after another on one core.
//
// Usage: attest-bench-shc [count] (default 20,000); run from the repository's root.

let count = max(1, CommandLine.arguments.dropFirst().first.flatMap(Int.init) ?? 20_000)
let fixtures = URL(fileURLWithPath: "Tests/SmartHealthCards")
let qr = String(decoding: try Data(contentsOf: fixtures.appending(path: "example-00.qr.txt")), as: UTF8.self)
    .trimmingCharacters(in: .whitespacesAndNewlines)
let jwks = try JSONValue(parsing: Array(try Data(contentsOf: fixtures.appending(path: "example-issuer-jwks.json"))))
let issuer = TrustedIssuer(
    iss: "https://spec.smarthealth.cards/examples/issuer", name: "SMART example issuer", keys: try TrustedIssuer.keys(jwks: jwks))
let now = Date()

// The bare reference's inputs: the same JWS, split once, outside the loop.
let jws = try SmartHealthCards.jws(qr: [qr])
let parts = jws.split(separator: ".")
let signingInput = Data(jws.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
let signatureText = parts[2]
guard let key = issuer.keys["3Kfdg-XwP-7gXyywtUfUADwBumDOPKMQx-iELL11W9s"] else {
    fatalError("Tests/SmartHealthCards/example-issuer-jwks.json lacks the key that signs card 00: run from the repository's root")
}

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}
let clock = ContinuousClock()
var sink = 0

@MainActor func timeCards() throws -> Double {
    let start = clock.now
    for _ in 0..<count {
        let opened = try SmartHealthCards.open(try SmartHealthCards.jws(qr: [qr]))
        let card = try SmartHealthCards.verify(opened, issuer: issuer, now: now)
        sink &+= card.doses.count
    }
    return seconds(clock.now - start)
}

@MainActor func timeBare() throws -> Double {
    let start = clock.now
    for _ in 0..<count {
        guard let raw = Data(base64URLEncoded: signatureText) else { fatalError("the example's signature is base64url") }
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: raw)
        sink &+= key.isValidSignature(signature, for: signingInput) ? 1 : 0
    }
    return seconds(clock.now - start)
}

for _ in 0..<max(1, count / 10) { sink &+= try SmartHealthCards.verify(SmartHealthCards.open(jws), issuer: issuer, now: now).doses.count }
let cards = try timeCards()
let bare = try timeBare()
let cardRate = Double(count) / cards, bareRate = Double(count) / bare
print("\(count) verifications of the specification's example card (\(qr.utf8.count) characters of QR text), one core:")
print(String(format: "  SMART Health Card, whole:  %8.0f a second (%.1f µs each)", cardRate, cards / Double(count) * 1e6))
print(String(format: "  bare ES256 of the same JWS: %7.0f a second (%.1f µs each)", bareRate, bare / Double(count) * 1e6))
print(String(format: "RESULT shc_rate=%.0f es256_rate=%.0f shc_ratio=%.3f check=%d", cardRate, bareRate, cardRate / bareRate, sink & 1))
