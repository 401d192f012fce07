import Synchronization
import Tenancy
import Testing

/// The cache in front of campuses, questionnaires, badge rules, badge keys and sinks: when an
/// entry is missing or expires while many requests want it, one load serves them all.
@Suite struct ExpiringCacheTests {
    struct Failure: Error, Equatable {}

    /// A load that counts its calls, waits a while (so the others arrive meanwhile), and
    /// answers its call number, or fails while `failing` is set.
    final class Loader: Sendable {
        let calls = Atomic<Int>(0)
        let failing = Atomic<Bool>(false)

        @Sendable func load() async throws -> Int {
            let call = calls.add(1, ordering: .relaxed).newValue
            try await Task.sleep(for: .milliseconds(100))
            if failing.load(ordering: .relaxed) { throw Failure() }
            return call
        }
    }

    static func concurrently(_ count: Int, _ cache: ExpiringCache<String, Int>, _ loader: Loader) async -> [Result<Int, any Error>] {
        await withTaskGroup(of: Result<Int, any Error>.self) { group in
            for _ in 0..<count {
                group.addTask {
                    do { return .success(try await cache.value(for: "campus", orLoad: loader.load)) } catch { return .failure(error) }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
    }

    @Test func concurrentMissesShareOneLoad() async throws {
        let cache = ExpiringCache<String, Int>(ttl: .seconds(60)), loader = Loader()
        let results = await Self.concurrently(50, cache, loader)
        #expect(loader.calls.load(ordering: .relaxed) == 1)
        #expect(try results.map { try $0.get() } == Array(repeating: 1, count: 50))
        // Stored: the next reader does not load at all.
        #expect(try await cache.value(for: "campus", orLoad: loader.load) == 1)
        #expect(cache.value(for: "campus") == 1)
        #expect(loader.calls.load(ordering: .relaxed) == 1)
    }

    @Test func aFailedLoadFailsItsWaitersAndIsNotKept() async throws {
        let cache = ExpiringCache<String, Int>(ttl: .seconds(60)), loader = Loader()
        loader.failing.store(true, ordering: .relaxed)
        let results = await Self.concurrently(20, cache, loader)
        #expect(loader.calls.load(ordering: .relaxed) == 1)
        #expect(results.allSatisfy { if case .failure(let error) = $0 { error is Failure } else { false } })
        #expect(cache.value(for: "campus") == nil)
        // The next call tries again.
        loader.failing.store(false, ordering: .relaxed)
        #expect(try await cache.value(for: "campus", orLoad: loader.load) == 2)
    }

    @Test func anExpiredEntryIsLoadedAgainOnce() async throws {
        let cache = ExpiringCache<String, Int>(ttl: .milliseconds(50)), loader = Loader()
        #expect(try await cache.value(for: "campus", orLoad: loader.load) == 1)
        try await Task.sleep(for: .milliseconds(80))
        #expect(cache.value(for: "campus") == nil)
        let results = await Self.concurrently(30, cache, loader)
        #expect(try results.map { try $0.get() } == Array(repeating: 2, count: 30))
        #expect(loader.calls.load(ordering: .relaxed) == 2)
    }

    @Test func keysDoNotShareLoads() async throws {
        let cache = ExpiringCache<String, Int>(ttl: .seconds(60)), loader = Loader()
        async let a = cache.value(for: "a", orLoad: loader.load)
        async let b = cache.value(for: "b", orLoad: loader.load)
        let values = try await [a, b]
        #expect(Set(values) == [1, 2])
        #expect(loader.calls.load(ordering: .relaxed) == 2)
    }

    @Test func aCancelledWaiterDoesNotCancelTheLoadForTheOthers() async throws {
        let cache = ExpiringCache<String, Int>(ttl: .seconds(60)), loader = Loader()
        let first = Task { try await cache.value(for: "campus", orLoad: loader.load) }
        try await Task.sleep(for: .milliseconds(20))
        first.cancel()
        #expect(try await cache.value(for: "campus", orLoad: loader.load) == 1)
        #expect(loader.calls.load(ordering: .relaxed) == 1)
    }

    /// Memory holds about one TTL's worth of keys: two half-TTL rotations after a burst, the
    /// burst's entries are gone, not just unserved. (Only lower bounds on time: a sleep may
    /// overrun, never fall short.)
    @Test func staleEntriesLeaveMemory() async throws {
        // A half TTL of 1 s: the burst of stores cannot straddle a rotation on a loaded machine.
        let cache = ExpiringCache<Int, Int>(ttl: .seconds(2), limit: 1_000_000)
        for key in 0..<1_000 { cache.store(key, for: key) }
        #expect(cache.count == 1_000)
        try await Task.sleep(for: .milliseconds(1_100))
        cache.store(-1, for: -1)  // begins a generation; the burst is the older one now
        #expect(cache.count == 1_001)
        try await Task.sleep(for: .milliseconds(1_100))
        cache.store(-2, for: -2)  // the burst's generation is dropped
        #expect(cache.count == 2)
        #expect(cache.value(for: 999) == nil && cache.value(for: -2) == -2)
    }

    /// An entry still younger than the TTL is served from the older generation; it goes
    /// with that generation.
    @Test func theOlderGenerationIsServedUntilItIsDropped() {
        let cache = ExpiringCache<String, Int>(ttl: .seconds(60), limit: 4)  // generations of 2
        cache.store(1, for: "a")
        cache.store(2, for: "b")
        cache.store(3, for: "c")  // a and b are the older generation now
        #expect(cache.value(for: "a") == 1 && cache.value(for: "b") == 2 && cache.value(for: "c") == 3)
        cache.store(4, for: "d")
        cache.store(5, for: "e")  // a and b go
        #expect(cache.value(for: "a") == nil && cache.value(for: "b") == nil)
        #expect(cache.value(for: "c") == 3 && cache.value(for: "d") == 4 && cache.value(for: "e") == 5)
        #expect(cache.count == 3)
    }

    /// However fast keys arrive, at most `limit` are held, and the newest are the ones kept.
    @Test func theLimitBoundsTheCountAndKeepsTheNewest() {
        let cache = ExpiringCache<Int, Int>(ttl: .seconds(60), limit: 100)
        for key in 0..<1_000 {
            cache.store(key, for: key)
            #expect(cache.count <= 100)
        }
        #expect((950..<1_000).allSatisfy { cache.value(for: $0) == $0 })
        #expect((0..<900).allSatisfy { cache.value(for: $0) == nil })
    }

    /// A value stored as of an earlier instant expires a TTL after that instant.
    @Test func aValueIsAsFreshAsTheInstantItWasStoredAt() throws {
        let cache = ExpiringCache<String, Int>(ttl: .seconds(5))
        cache.store(1, for: "read long ago", at: .now - .seconds(6))
        cache.store(2, for: "read just now", at: .now - .seconds(1))
        #expect(cache.value(for: "read long ago") == nil)
        #expect(cache.value(for: "read just now") == 2)
        // `entry` says as of when: what is made from the value is kept no longer than it.
        let stored = ContinuousClock.now - .seconds(2)
        cache.store(3, for: "read a moment ago", at: stored)
        let entry = try #require(cache.entry(for: "read a moment ago"))
        #expect(
            entry.value == 3 && entry.at - stored < .microseconds(1) && stored - entry.at < .microseconds(1),
            "\(entry.at) against \(stored)")
        #expect(cache.entry(for: "read long ago") == nil)
        cache.remove("read just now")
        #expect(cache.value(for: "read just now") == nil && cache.count == 2)
    }
}
