import AttestPlugins
import Foundation
import Hummingbird
import Synchronization

/// Token buckets by key, in this server's memory: each key may spend `burst` at once and
/// gets `perMinute` back a minute, continuously. Memory is bounded: past `maxKeys` keys the
/// buckets that have refilled (which hold nothing worth remembering) are dropped first.
package final class RateLimiter: Sendable {
    package typealias Limit = RateLimit

    private struct Bucket {
        package var tokens: Double
        package var updated: ContinuousClock.Instant
    }

    package let limit: Limit
    package let maxKeys: Int
    /// For a limiter keyed by client address: the IPv6 prefix length counted as one client
    /// (nil: keys are taken as they are).
    package let ipv6Prefix: Int?
    private let buckets = Mutex<[String: Bucket]>([:])

    package init(_ limit: Limit, maxKeys: Int = 50_000, ipv6Prefix: Int? = nil) {
        self.limit = limit
        self.maxKeys = max(1, maxKeys)
        self.ipv6Prefix = ipv6Prefix
    }

    /// Spends `cost` (one by default) from `key`'s bucket; nil when allowed, else how long until
    /// one is back. A bucket holding at least one allows any cost, and owes the rest.
    package func take(_ key: String, cost: Double = 1, now: ContinuousClock.Instant = .now) -> Duration? {
        update(key, now: now, spend: max(0, cost))
    }

    /// The client a key stands for: an IPv6 address by its network (`ipv6Prefix` bits, a /64
    /// by default: one subscriber's whole allocation, which a client can rotate through at
    /// will), an IPv4 one (or an IPv4-mapped IPv6 one) as itself.
    package func client(_ key: String) -> String {
        guard let ipv6Prefix else { return key }
        return Self.network(of: key, ipv6Prefix: ipv6Prefix)
    }

    package static func network(of address: String, ipv6Prefix: Int) -> String {
        var bytes = [UInt8](repeating: 0, count: 16)
        guard address.contains(":"), inet_pton(AF_INET6, address, &bytes) == 1 else { return address }
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {
            return bytes[12...].map { String($0) }.joined(separator: ".")
        }
        let bits = min(128, max(0, ipv6Prefix))
        for index in 0..<16 {
            let kept = min(8, max(0, bits - index * 8))
            bytes[index] &= kept == 8 ? 0xFF : UInt8(truncatingIfNeeded: 0xFF00 >> kept)
        }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(AF_INET6, bytes, &text, socklen_t(text.count)) != nil else { return address }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) + "/\(bits)"
    }

    /// How many keys are remembered (for tests of the bound).
    package var keyCount: Int { buckets.withLock { $0.count } }

    /// Whether `key`'s bucket is empty now, without spending: how long until one is back.
    package func exhausted(_ key: String, now: ContinuousClock.Instant = .now) -> Duration? {
        update(key, now: now, spend: 0)
    }

    private func update(_ key: String, now: ContinuousClock.Instant, spend: Double) -> Duration? {
        let key = client(key)
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
            bucket.tokens -= spend
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
    /// How many leading bits of an IPv6 address one client is counted by. Default 64: a
    /// subscriber gets at least a /64, and any address in it at will.
    public var ipv6Prefix: Int
    /// Exports of one member's journal, their own and through their links (each a year of the
    /// largest entries may take a second of a core to write). Default 10 at once, then 10 an hour.
    public var exportsPerMember: RateLimit
    /// Megabytes of one member's recordings written or read back. Default 25 at once, then 10 a minute.
    public var recordingMegabytesPerMember: RateLimit
    /// Requests for one member's own private data (journal, episodes, exports, links). Default
    /// 60 at once, then 300 a minute: a person at the pages never comes near it.
    public var ownDataRequestsPerMember: RateLimit
    /// Images one screener sends to `badges/scan` (each a decode on the server). Default 30 at
    /// once, then 600 a minute: a camera page sends about three frames a second.
    public var scansPerScreener: RateLimit = .init(burst: 30, perMinute: 600)
    /// Visits registered from one client address (each sends an email). Default 10 at once,
    /// then one a minute: a family at the door, not a script (`serve --guest-visits-per-address`).
    public var guestVisitsPerAddress: RateLimit = .init(burst: 10, perMinute: 1)

    public init(
        signInPerAddress: RateLimit = .init(burst: 30, perMinute: 30),
        signInPerCampus: RateLimit = .init(burst: 300, perMinute: 1_200),
        unknownTokensPerAddress: RateLimit = .init(burst: 100, perMinute: 600), ipv6Prefix: Int = 64,
        exportsPerMember: RateLimit = .init(burst: 10, perMinute: 10.0 / 60),
        recordingMegabytesPerMember: RateLimit = .init(burst: 25, perMinute: 10),
        ownDataRequestsPerMember: RateLimit = .init(burst: 60, perMinute: 300), guestVisitsPerAddress: Int = 10
    ) {
        self.guestVisitsPerAddress = .init(burst: Double(guestVisitsPerAddress), perMinute: Double(guestVisitsPerAddress) / 10)
        self.ownDataRequestsPerMember = ownDataRequestsPerMember
        self.signInPerAddress = signInPerAddress
        self.signInPerCampus = signInPerCampus
        self.unknownTokensPerAddress = unknownTokensPerAddress
        self.ipv6Prefix = ipv6Prefix
        self.exportsPerMember = exportsPerMember
        self.recordingMegabytesPerMember = recordingMegabytesPerMember
    }
}

/// The limiters of one server.
public struct RequestLimiters: Sendable {
    package let signInByAddress: RateLimiter
    package let signInByCampus: RateLimiter
    package let unknownTokensByAddress: RateLimiter
    package let exportsByMember: RateLimiter
    package let recordingsByMember: RateLimiter
    package let ownDataByMember: RateLimiter
    package let scansByScreener: RateLimiter
    package let guestVisitsByAddress: RateLimiter
    /// Members with an export being written: one at a time each.
    package let exporting = MemberWork()

    public init(_ limits: RateLimits) {
        signInByAddress = RateLimiter(limits.signInPerAddress, ipv6Prefix: limits.ipv6Prefix)
        signInByCampus = RateLimiter(limits.signInPerCampus)
        unknownTokensByAddress = RateLimiter(limits.unknownTokensPerAddress, ipv6Prefix: limits.ipv6Prefix)
        exportsByMember = RateLimiter(limits.exportsPerMember)
        recordingsByMember = RateLimiter(limits.recordingMegabytesPerMember)
        ownDataByMember = RateLimiter(limits.ownDataRequestsPerMember)
        scansByScreener = RateLimiter(limits.scansPerScreener)
        guestVisitsByAddress = RateLimiter(limits.guestVisitsPerAddress, ipv6Prefix: limits.ipv6Prefix)
    }

    /// Counts one visit registered from `address` (at any campus); 429 with `Retry-After` past the allowance.
    package func admitGuestVisit(address: String?) throws {
        if let wait = guestVisitsByAddress.take(address ?? "unknown") {
            throw Problem.tooManyRequests(
                "Too many visits were registered from your address: wait a few minutes, or ask the front desk to register you.",
                retryAfter: wait)
        }
    }

    /// Counts one image a screener sends to be scanned; 429 with `Retry-After` past the allowance.
    package func admitScan(campus: CampusID, screener: UserID) throws {
        if let wait = scansByScreener.take("\(campus)/\(screener)") {
            let limit = scansByScreener.limit
            throw Problem.tooManyRequests(
                "You sent more images to scan than a door needs (\(Self.rate(limit.burst)) at once, then \(Self.rate(limit.perMinute)) a minute): wait a moment.",
                retryAfter: wait)
        }
    }

    /// Admits one export of `member`'s journal (their own, or a link's opening): one at a time,
    /// and within the member's allowance; 429 with `Retry-After` otherwise. Call `finished` once
    /// the export is written (or failed).
    package func admitExport(campus: CampusID, member: UserID) throws -> MemberWork.Ticket {
        let key = "\(campus)/\(member)"
        guard let ticket = exporting.begin(key) else {
            throw Problem.tooManyRequests(
                "An export of this journal is being written now; one is written at a time.", retryAfter: .seconds(5))
        }
        if let wait = exportsByMember.take(key) {
            ticket.finished()
            let limit = exportsByMember.limit
            throw Problem.tooManyRequests(
                "This journal was exported as often as it may be for now (\(Int(limit.burst)) at once, then \(Self.rate(limit.perMinute * 60)) an hour).",
                retryAfter: wait)
        }
        return ticket
    }

    /// Counts `bytes` of `member`'s recordings written or read back; 429 with `Retry-After`
    /// past the allowance.
    package func admitRecording(campus: CampusID, member: UserID, bytes: Int) throws {
        if let wait = recordingsByMember.take("\(campus)/\(member)", cost: Double(bytes) / 1_048_576) {
            let limit = recordingsByMember.limit
            throw Problem.tooManyRequests(
                "Your recordings were written and read back as much as they may be for now (\(Int(limit.burst)) MB at once, then \(Self.rate(limit.perMinute)) MB a minute).",
                retryAfter: wait)
        }
    }

    /// `2`, `0.5`: a rate as a person reads it.
    package static func rate(_ value: Double) -> String {
        value.rounded() == value && value < 1e9 ? String(Int(exactly: value) ?? 0) : String(format: "%.1f", value)
    }

    /// Counts a sign-in attempt (or a nonce asked for) from `address` at `campus`; throws 429
    /// when either has used up its allowance. The client's own allowance is spent first, and
    /// the campus's only when it allows: one client (one IPv4 address, one IPv6 /64) spends at
    /// most its own burst of the campus's, which is ten times larger.
    package func admitSignIn(address: String?, campus: String) throws {
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
    package static func tooManyRequests(_ detail: String, retryAfter: Duration) -> Problem {
        let seconds = max(1, retryAfter.components.seconds + (retryAfter.components.attoseconds > 0 ? 1 : 0))
        return Problem(
            .tooManyRequests, slug: "too-many-requests", title: "Too many requests", detail: detail + " Retry in \(seconds) s.",
            headers: [.retryAfter: "\(seconds)"])
    }
}

/// Keys with work under way: one piece of work a key at a time. A ticket not finished within
/// `stale` (a response whose body was never written, its client gone) no longer holds its key.
package final class MemberWork: Sendable {
    private let busy = Mutex<[String: ContinuousClock.Instant]>([:])
    package let stale: Duration

    package init(stale: Duration = .seconds(300)) { self.stale = stale }

    /// Lets the holder do its key's work; `finished` lets the next.
    package final class Ticket: Sendable {
        private let work: MemberWork
        private let key: String
        private let done = Atomic<Bool>(false)

        package init(work: MemberWork, key: String) { (self.work, self.key) = (work, key) }

        package func finished() {
            guard !done.exchange(true, ordering: .relaxed) else { return }
            _ = work.busy.withLock { $0.removeValue(forKey: key) }
        }
    }

    /// A ticket, or nil while another holds `key`'s.
    package func begin(_ key: String, now: ContinuousClock.Instant = .now) -> Ticket? {
        let stale = stale
        let admitted = busy.withLock { busy in
            if let since = busy[key], now - since < stale { return false }
            if busy.count > 10_000 { busy = busy.filter { now - $0.value < stale } }
            busy[key] = now
            return true
        }
        return admitted ? Ticket(work: self, key: key) : nil
    }
}
