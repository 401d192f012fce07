import Foundation
import Hummingbird
import Synchronization

/// Token buckets by key, in this server's memory: each key may spend `burst` at once and
/// gets `perMinute` back a minute, continuously. Memory is bounded: past `maxKeys` keys the
/// buckets that have refilled (which hold nothing worth remembering) are dropped first.
final class RateLimiter: Sendable {
    typealias Limit = RateLimit

    private struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
    }

    let limit: Limit
    let maxKeys: Int
    private let buckets = Mutex<[String: Bucket]>([:])

    init(_ limit: Limit, maxKeys: Int = 50_000) {
        self.limit = limit
        self.maxKeys = max(1, maxKeys)
    }

    /// Spends one from `key`'s bucket; nil when allowed, else how long until one is back.
    func take(_ key: String, now: ContinuousClock.Instant = .now) -> Duration? {
        update(key, now: now, spend: true)
    }

    /// How many keys are remembered (for tests of the bound).
    var keyCount: Int { buckets.withLock { $0.count } }

    /// Whether `key`'s bucket is empty now, without spending: how long until one is back.
    func exhausted(_ key: String, now: ContinuousClock.Instant = .now) -> Duration? {
        update(key, now: now, spend: false)
    }

    private func update(_ key: String, now: ContinuousClock.Instant, spend: Bool) -> Duration? {
        let perSecond = limit.perMinute / 60
        return buckets.withLock { buckets in
            var bucket = buckets[key] ?? Bucket(tokens: limit.burst, updated: now)
            let elapsed = now - bucket.updated
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            bucket.tokens = min(limit.burst, bucket.tokens + max(0, seconds) * perSecond)
            bucket.updated = now
            guard bucket.tokens >= 1 else {
                buckets[key] = bucket
                let wait = perSecond > 0 ? (1 - bucket.tokens) / perSecond : 3_600
                return .milliseconds(Int64(exactly: (min(wait, 3_600) * 1000).rounded(.up)) ?? 3_600_000)
            }
            if spend { bucket.tokens -= 1 }
            if buckets[key] == nil, buckets.count >= maxKeys { Self.prune(&buckets, now: now, limit: limit, keep: maxKeys / 2) }
            buckets[key] = bucket
            return nil
        }
    }

    /// Drops the buckets that have refilled, then, if still too many, any.
    private static func prune(_ buckets: inout [String: Bucket], now: ContinuousClock.Instant, limit: Limit, keep: Int) {
        let perSecond = limit.perMinute / 60
        buckets = buckets.filter { _, bucket in
            let elapsed = now - bucket.updated
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            return bucket.tokens + seconds * perSecond < limit.burst
        }
        while buckets.count > keep, let key = buckets.keys.first { buckets.removeValue(forKey: key) }
    }
}

/// How much one key (an address, a campus) may do: `burst` at once, `perMinute` back a minute.
public struct RateLimit: Sendable, Equatable {
    public var burst: Double
    public var perMinute: Double
    public init(burst: Double, perMinute: Double) {
        self.burst = max(1, burst)
        self.perMinute = max(0, perMinute)
    }
}

/// The limits a server applies, per client address and per campus. Every field has a default.
public struct RateLimits: Sendable, Equatable {
    /// Sign-in attempts (and sign-in nonces) from one address. Default 30 at once, 30 a minute.
    public var signInPerAddress: RateLimit
    /// Sign-in attempts at one campus, from everywhere. Default 300 at once, 1,200 a minute.
    public var signInPerCampus: RateLimit
    /// Requests from one address whose bearer token is unknown (each costs a database
    /// read). Default 100 at once, 600 a minute; tokens this server knows are never limited.
    public var unknownTokensPerAddress: RateLimit

    public init(
        signInPerAddress: RateLimit = .init(burst: 30, perMinute: 30),
        signInPerCampus: RateLimit = .init(burst: 300, perMinute: 1_200),
        unknownTokensPerAddress: RateLimit = .init(burst: 100, perMinute: 600)
    ) {
        self.signInPerAddress = signInPerAddress
        self.signInPerCampus = signInPerCampus
        self.unknownTokensPerAddress = unknownTokensPerAddress
    }
}

/// The limiters of one server.
public struct RequestLimiters: Sendable {
    let signInByAddress: RateLimiter
    let signInByCampus: RateLimiter
    let unknownTokensByAddress: RateLimiter

    public init(_ limits: RateLimits) {
        signInByAddress = RateLimiter(limits.signInPerAddress)
        signInByCampus = RateLimiter(limits.signInPerCampus)
        unknownTokensByAddress = RateLimiter(limits.unknownTokensPerAddress)
    }

    /// Counts a sign-in attempt (or a nonce asked for) from `address` at `campus`; throws 429
    /// when either has used up its allowance.
    func admitSignIn(address: String?, campus: String) throws {
        if let wait = signInByAddress.take(address ?? "unknown") {
            throw Problem.tooManyRequests("Too many sign-in attempts came from your address.", retryAfter: wait)
        }
        if let wait = signInByCampus.take(campus) {
            throw Problem.tooManyRequests("Too many sign-in attempts at this campus right now.", retryAfter: wait)
        }
    }
}

extension Problem {
    /// 429 with `Retry-After` in whole seconds (at least 1).
    static func tooManyRequests(_ detail: String, retryAfter: Duration) -> Problem {
        let seconds = max(1, retryAfter.components.seconds + (retryAfter.components.attoseconds > 0 ? 1 : 0))
        return Problem(
            .tooManyRequests, slug: "too-many-requests", title: "Too many requests", detail: detail + " Retry in \(seconds) s.",
            headers: [.retryAfter: "\(seconds)"])
    }
}
