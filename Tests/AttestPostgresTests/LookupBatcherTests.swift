import Foundation
import Synchronization
import Testing

@testable import AttestPostgres

/// `LookupBatcher` against a real database: the loads are real queries.
@Suite("Lookup batching")
struct LookupBatcherTests {
    struct Refused: Error {}

    /// Loads even keys as key × 10 (odd keys are "not found"). The first load holds until
    /// `hold` callers wait behind it, so the batches are known in advance.
    final class Loader: Sendable {
        let client: PostgresClient
        let hold: Int
        let refuse: Int64?
        let batches = Mutex<[[Int64]]>([])
        let batcher = Mutex<LookupBatcher<String, Int64, Int64>?>(nil)

        init(client: PostgresClient, hold: Int, refuse: Int64? = nil) {
            self.client = client
            self.hold = hold
            self.refuse = refuse
        }

        func load(_ group: String, _ keys: [Int64]) async throws -> [Int64: Int64] {
            let first = batches.withLock { batches in
                batches.append(keys.sorted())
                return batches.count == 1
            }
            if first, let batcher = batcher.withLock({ $0 }) {
                let deadline = ContinuousClock.now + .seconds(20)
                while batcher.waiting(in: group) < hold, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
            }
            if let refuse, keys.contains(refuse) { throw Refused() }
            let rows = try await client.query("SELECT k, k * 10 AS v FROM unnest(\(keys)) AS k WHERE k % 2 = 0")
            return try Dictionary(
                uniqueKeysWithValues: rows.map { (try $0.decode("k", as: Int64.self), try $0.decode("v", as: Int64.self)) })
        }

        func make(maxBatch: Int = 256) -> LookupBatcher<String, Int64, Int64> {
            let batcher = LookupBatcher<String, Int64, Int64>(maxBatch: maxBatch) { group, keys in try await self.load(group, keys) }
            self.batcher.withLock { $0 = batcher }
            return batcher
        }
    }

    @Test func concurrentLookupsShareOneQuery() async throws {
        try await withFreshDatabase { client async throws in
            let loader = Loader(client: client, hold: 49)
            let batcher = loader.make()
            let keys: [Int64] = (1...49).map { Int64($0 % 20) }  // repeats: 20 distinct keys
            let values = try await withThrowingTaskGroup(of: (Int64, Int64?).self) { group in
                group.addTask { (100, try await batcher.value(for: 100, in: "north")) }
                while loader.batches.withLock({ $0.isEmpty }) { try await Task.sleep(for: .milliseconds(5)) }
                for key in keys { group.addTask { (key, try await batcher.value(for: key, in: "north")) } }
                return try await group.reduce(into: [(Int64, Int64?)]()) { $0.append($1) }
            }
            #expect(values.count == 50)
            for (key, value) in values { #expect(value == (key % 2 == 0 ? key * 10 : nil), "key \(key)") }
            let batches = loader.batches.withLock { $0 }
            // The first caller alone, then everyone who came meanwhile, each key once.
            #expect(batches == [[100], Array(Set(keys)).sorted()])
            #expect(batcher.waiting(in: "north") == 0)
        }
    }

    @Test func groupsAreLoadedApart() async throws {
        try await withFreshDatabase { client async throws in
            let loader = Loader(client: client, hold: 0)
            let batcher = loader.make()
            async let north = batcher.value(for: 2, in: "north")
            async let south = batcher.value(for: 4, in: "south")
            #expect(try await north == 20)
            #expect(try await south == 40)
            #expect(loader.batches.withLock { $0.count } == 2)
        }
    }

    @Test func aFailedBatchFailsItsCallersOnlyAndTheGroupGoesOn() async throws {
        try await withFreshDatabase { client async throws in
            let loader = Loader(client: client, hold: 2, refuse: 13)
            let batcher = loader.make()
            let outcomes = try await withThrowingTaskGroup(of: (Int64, Result<Int64?, any Error>).self) { group in
                group.addTask { (2, await Result { try await batcher.value(for: 2, in: "north") }) }
                // 2 is loaded alone; 13 and 14 queue behind it.
                while loader.batches.withLock({ $0.isEmpty }) { try await Task.sleep(for: .milliseconds(5)) }
                for key: Int64 in [13, 14] { group.addTask { (key, await Result { try await batcher.value(for: key, in: "north") }) } }
                return try await group.reduce(into: [Int64: Result<Int64?, any Error>]()) { $0[$1.0] = $1.1 }
            }
            #expect(try outcomes[2]?.get() == 20)
            #expect(throws: Refused.self) { try outcomes[13]?.get() }
            #expect(throws: Refused.self) { try outcomes[14]?.get() }
            #expect(try await batcher.value(for: 14, in: "north") == 140)
        }
    }

    /// The first caller's request is cancelled mid-load (its client went away): the callers
    /// waiting for the next batch still get their values.
    @Test func aCancelledCallerDoesNotFailTheOthers() async throws {
        try await withFreshDatabase { client async throws in
            let loader = Loader(client: client, hold: 3)
            let batcher = loader.make()
            let first = Task { try await batcher.value(for: 2, in: "north") }
            while loader.batches.withLock({ $0.isEmpty }) { try await Task.sleep(for: .milliseconds(5)) }
            async let four = batcher.value(for: 4, in: "north")
            async let five = batcher.value(for: 5, in: "north")
            async let six = batcher.value(for: 6, in: "north")
            while batcher.waiting(in: "north") < 3 { try await Task.sleep(for: .milliseconds(5)) }
            first.cancel()
            #expect(try await [four, five, six] == [40, nil, 60])
            #expect(try await first.value == 20)
        }
    }

    @Test func batchesAreCappedAtMaxBatch() async throws {
        try await withFreshDatabase { client async throws in
            let loader = Loader(client: client, hold: 25)
            let batcher = loader.make(maxBatch: 10)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    let value = try await batcher.value(for: 100, in: "north")
                    #expect(value == 1000)
                }
                while loader.batches.withLock({ $0.isEmpty }) { try await Task.sleep(for: .milliseconds(5)) }
                for key in 0..<25 {
                    group.addTask {
                        let value = try await batcher.value(for: Int64(key), in: "north")
                        #expect(value == (key % 2 == 0 ? Int64(key * 10) : nil))
                    }
                }
                try await group.waitForAll()
            }
            #expect(loader.batches.withLock { $0.map(\.count) } == [1, 10, 10, 5])
        }
    }
}

extension Result where Failure == any Error {
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
