import Crypto
import Foundation
import Notifications

// Benchmarks/reminders' Web Push half (DESIGN.md §8): the server's RFC 8291 encryption
// (`WebPushEncryption.encrypt`: a fresh sender key, the ECDH with the browser's key, HKDF,
// one AES-128-GCM record) of a reminder's payload to each of N browsers, against a bare
// AES-128-GCM seal of the same plaintext (a fresh random nonce each, one key), on one core.
// Also timed apart: the sender key as the server makes it and the ECDH alone (what RFC 8291
// asks for each message), the floor any encryption of a push message stands on; and the same
// with swift-crypto's own key generation (`P256.KeyAgreement.PrivateKey()`), which runs FIPS's
// pairwise test on every key. And each request's VAPID header as the server makes it (one
// token a push service and contact, used again for an hour), against a token made for each
// request, as the server did before 2026-12-01.
//
// Usage: attest-bench-push [count] (default 50,000)

let count = max(1, CommandLine.arguments.dropFirst().first.flatMap(Int.init) ?? 50_000)

// What WebPushDelivery sends for a reminder, as it encodes it.
let payload = try JSONEncoder().encode([
    "title": "Reminder: today's health check", "body": "You have not answered today's survey at Demo University yet.",
    "url": "https://attest.example.edu/c/demo/survey", "tag": "attest-reminder", "lang": "en",
])

// The browsers: a P-256 key and a 16-byte auth secret each, as PushManager makes them.
var generator = SystemRandomNumberGenerator()
@MainActor func randomBytes(_ count: Int) -> Data { Data((0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }) }
let browsers = (0..<count).map { _ in (p256dh: P256.KeyAgreement.PrivateKey().publicKey.x963Representation, auth: randomBytes(16)) }

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}
let clock = ContinuousClock()
var sink = 0  // what each loop made, so none of it is optimised away

@MainActor func timeWebPush() throws -> Double {
    let start = clock.now
    for browser in browsers {
        sink &+= try WebPushEncryption.encrypt(payload, p256dh: browser.p256dh, auth: browser.auth).count
    }
    return seconds(clock.now - start)
}

@MainActor func timeSeal() throws -> Double {
    let key = SymmetricKey(size: .bits128)
    // The same plaintext a record carries: the payload and its delimiter.
    let plaintext = payload + [2]
    let start = clock.now
    for _ in 0..<count {
        let sealed = try AES.GCM.seal(plaintext, using: key, nonce: AES.GCM.Nonce())
        sink &+= sealed.ciphertext.count + sealed.tag.count
    }
    return seconds(clock.now - start)
}

@MainActor func timeAgreement(fips: Bool) throws -> Double {
    let start = clock.now
    for browser in browsers {
        let sender = fips ? P256.KeyAgreement.PrivateKey() : WebPushEncryption.newSenderKey()
        let shared = try sender.sharedSecretFromKeyAgreement(with: P256.KeyAgreement.PublicKey(x963Representation: browser.p256dh))
        sink &+= shared.withUnsafeBytes { Int($0[0]) } &+ sender.publicKey.x963Representation.count
    }
    return seconds(clock.now - start)
}

struct BenchError: Error, CustomStringConvertible { let description: String }

@MainActor func timeVAPID(reused: Bool) throws -> Double {
    let key = VAPIDKey(privateKey: P256.Signing.PrivateKey())
    // Three push services, as browsers' subscriptions spread over them.
    let endpoints = [
        "https://fcm.googleapis.com/fcm/send/", "https://updates.push.services.mozilla.com/wpush/v2/", "https://web.push.apple.com/",
    ]
    .compactMap { URL(string: $0 + UUID().uuidString) }
    guard endpoints.count == 3 else { throw BenchError(description: "a push service's address did not parse") }
    let now = Date()
    let start = clock.now
    for index in 0..<count {
        // Each request an hour after the last: a new token each time, as before the reuse.
        let at = reused ? now : now.addingTimeInterval(Double(index) * 3_600)
        sink &+= try key.authorization(endpoint: endpoints[index % endpoints.count], subject: "mailto:health@example.edu", now: at).utf8
            .count
    }
    return seconds(clock.now - start)
}

// Warm up each once on a tenth, then time each in turn.
let warm = Array(browsers.prefix(max(1, count / 10)))
for browser in warm { sink &+= try WebPushEncryption.encrypt(payload, p256dh: browser.p256dh, auth: browser.auth).count }
let push = try timeWebPush()
let seal = try timeSeal()
let agreement = try timeAgreement(fips: false)
let fipsAgreement = try timeAgreement(fips: true)
let vapid = try timeVAPID(reused: true)
let vapidEach = try timeVAPID(reused: false)

let pushRate = Double(count) / push, sealRate = Double(count) / seal, agreementRate = Double(count) / agreement
let fipsRate = Double(count) / fipsAgreement
let vapidRate = Double(count) / vapid, vapidEachRate = Double(count) / vapidEach
print("\(count) reminders of \(payload.count) bytes, one core:")
print(String(format: "  Web Push encryption (RFC 8291):   %9.0f a second (%.1f µs each)", pushRate, push / Double(count) * 1e6))
print(String(format: "  bare AES-128-GCM seal:            %9.0f a second (%.1f µs each)", sealRate, seal / Double(count) * 1e6))
print(String(format: "  sender key and ECDH alone:        %9.0f a second (%.1f µs each)", agreementRate, agreement / Double(count) * 1e6))
print(String(format: "  the same, swift-crypto's key:     %9.0f a second (%.1f µs each)", fipsRate, fipsAgreement / Double(count) * 1e6))
print(String(format: "  VAPID header, a token a service:  %9.0f a second (%.1f µs each)", vapidRate, vapid / Double(count) * 1e6))
print(String(format: "  a token made for each request:    %9.0f a second (%.1f µs each)", vapidEachRate, vapidEach / Double(count) * 1e6))
print(
    String(
        format:
            "RESULT push_rate=%.0f seal_rate=%.0f ecdh_rate=%.0f fips_ecdh_rate=%.0f ratio=%.3f ecdh_share=%.2f vapid_rate=%.0f vapid_each_rate=%.0f payload=%d check=%d",
        pushRate, sealRate, agreementRate, fipsRate, pushRate / sealRate, (agreement / Double(count)) / (push / Double(count)),
        vapidRate, vapidEachRate, payload.count, sink & 1))
