import AttestPlugins
import Crypto
import Foundation
import JWTKit
import Logging
import NIOCore
import Synchronization

/// A parsed JSON Web Key Set.
public struct KeySet: Sendable {
    let collection: JWTKeyCollection
    let keyIDs: Set<String>
    let count: Int

    /// Parses a JWKS, keeping the keys that make working RS256 or ES256 verifiers; `rejected`
    /// names the others (keys of other kinds, or malformed ones).
    static func parse(_ data: Data) async throws -> (keys: KeySet, rejected: [String]) {
        let jwks = try JSONDecoder().decode(JWKS.self, from: data)
        let collection = JWTKeyCollection()
        var ids: Set<String> = []
        var count = 0
        var rejected: [String] = []
        for key in jwks.keys {
            let name = key.keyIdentifier?.string ?? "key \(count + rejected.count + 1)"
            let algorithm = key.algorithm?.rawValue ?? (key.keyType == .ecdsa ? "ES256" : "RS256")
            guard algorithm == "ES256" || algorithm == "RS256" else {
                rejected.append(name)
                continue
            }
            do {
                // jwt-kit builds a key's verifier lazily; build it now so a bad key shows here.
                let probe = JWTKeyCollection()
                _ = try await probe.add(jwk: key)
                _ = try await probe.getKey(for: key.keyIdentifier, alg: algorithm)
                _ = try await collection.add(jwk: key)
                if let id = key.keyIdentifier?.string { ids.insert(id) }
                count += 1
            } catch {
                rejected.append(name)
            }
        }
        return (KeySet(collection: collection, keyIDs: ids, count: count), rejected)
    }
}

/// Issuers' signing keys, fetched with the platform's outbound client (https, public
/// addresses, no redirects, 5 s, 1 MiB) and cached as their `Cache-Control:
/// max-age` says (between one minute and one day; an hour when it says nothing). A token
/// naming a key the cache lacks triggers a refetch (a key rotation), at most once per
/// `minimumRefreshInterval` per URL, so forged `kid`s cannot make the server hammer the issuer.
/// When a refetch fails, the last good keys stay in use.
public final class JWKSCache: Sendable {
    private struct Entry {
        var keys: KeySet
        var fetchedAt: ContinuousClock.Instant
        var maxAge: Duration
    }

    private struct State {
        var entries: [String: Entry] = [:]
        /// When a token with an unknown key last made us refetch, per URL.
        var lastForcedRefresh: [String: ContinuousClock.Instant] = [:]
        var inline: [Data: KeySet] = [:]
    }

    let http: any PluginHTTPClient
    let minimumRefreshInterval: Duration
    let logger: Logger
    private let state = Mutex(State())
    /// The largest key set read.
    static let maxBytes = 1 << 20

    public init(http: any PluginHTTPClient, minimumRefreshInterval: Duration = .seconds(30), logger: Logger) {
        self.http = http
        self.minimumRefreshInterval = minimumRefreshInterval
        self.logger = logger
    }

    /// The keys at `url`, from the cache while fresh.
    func keys(url: String) async throws -> KeySet {
        let now = ContinuousClock.now
        if let entry = state.withLock({ $0.entries[url] }), now - entry.fetchedAt < entry.maxAge {
            return entry.keys
        }
        return try await fetch(url: url)
    }

    /// Fetches again for a key the cached set lacks, unless that was tried too recently.
    func keysAfterUnknownKey(url: String) async throws -> KeySet {
        let now = ContinuousClock.now
        let (allowed, cached) = state.withLock { state -> (Bool, KeySet?) in
            let recent = state.lastForcedRefresh[url].map { now - $0 < minimumRefreshInterval } ?? false
            if !recent { state.lastForcedRefresh[url] = now }
            return (!recent, state.entries[url]?.keys)
        }
        if allowed { return try await fetch(url: url) }
        if let cached { return cached }
        return try await fetch(url: url)
    }

    /// A key set given inline, parsed once.
    func inlineKeys(_ json: String) async throws -> KeySet {
        let digest = Data(SHA256.hash(data: Data(json.utf8)))
        if let keys = state.withLock({ $0.inline[digest] }) { return keys }
        let keys = try await KeySet.parse(Data(json.utf8)).keys
        state.withLock { $0.inline[digest] = keys }
        return keys
    }

    private func fetch(url: String) async throws -> KeySet {
        let shown = URL(string: url)?.forLogs ?? "(not a URL)"
        do {
            guard let target = URL(string: url) else { throw IdentityError.keysUnavailable("the key set's location is not a URL") }
            let response = try await http.send(
                PluginHTTPRequest(url: target, headers: [("Accept", "application/json")], timeout: .seconds(5)))
            guard response.status == 200 else { throw IdentityError.keysUnavailable("the key set answered HTTP \(response.status)") }
            guard response.body.count <= Self.maxBytes else { throw IdentityError.keysUnavailable("the key set is larger than 1 MiB") }
            let keys = try await KeySet.parse(response.body).keys
            let maxAge = Self.maxAge(response.header("Cache-Control"))
            state.withLock { $0.entries[url] = Entry(keys: keys, fetchedAt: .now, maxAge: maxAge) }
            logger.debug("fetched signing keys", metadata: ["url": "\(shown)", "keys": "\(keys.count)"])
            return keys
        } catch {
            if let stale = state.withLock({ $0.entries[url]?.keys }) {
                logger.warning("cannot refresh signing keys; using the last good set", metadata: ["url": "\(shown)", "error": "\(error)"])
                return stale
            }
            logger.error("cannot fetch signing keys", metadata: ["url": "\(shown)", "error": "\(error)"])
            if let error = error as? IdentityError { throw error }
            throw IdentityError.keysUnavailable("\(error)")
        }
    }

    static func maxAge(_ cacheControl: String?) -> Duration {
        guard let cacheControl else { return .seconds(3600) }
        var seconds = 3600
        for directive in cacheControl.lowercased().split(separator: ",") {
            let parts = directive.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
            if parts.first == "max-age", parts.count == 2, let value = Int(parts[1]) { seconds = value }
            if parts.first == "no-store" || parts.first == "no-cache" { seconds = 0 }
        }
        return .seconds(min(max(seconds, 60), 86_400))
    }
}
