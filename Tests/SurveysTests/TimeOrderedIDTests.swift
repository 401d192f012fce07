import Foundation
import Surveys
import Testing

@Suite("Time-ordered ids")
struct TimeOrderedIDTests {
    @Test func theyAreVersion7WithTheInstantsMillisecondsFirst() throws {
        let instant = Date(timeIntervalSince1970: 1_795_000_000.1235)  // 2026-11-18, mid-millisecond
        let id = UUID.timeOrdered(at: instant)
        let bytes = withUnsafeBytes(of: id.uuid) { Array($0) }
        let milliseconds = bytes[0..<6].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        #expect(milliseconds == 1_795_000_000_123)
        #expect(bytes[6] >> 4 == 7)  // version
        #expect(bytes[8] >> 6 == 0b10)  // RFC 9562 variant
        #expect(id.uuidString.lowercased().hasPrefix("01a1ee56-5e7b-7"))
    }

    @Test func laterIdsSortAfterAndIdsOfOneInstantDiffer() {
        func bytes(_ id: UUID) -> [UInt8] { withUnsafeBytes(of: id.uuid) { Array($0) } }
        // Instants 2 ms apart, each mid-millisecond, so no rounding puts two in one millisecond.
        let ids = (0..<1_000).map { UUID.timeOrdered(at: Date(timeIntervalSince1970: (1_795_000_000_000.5 + Double(2 * $0)) / 1000)) }
        let start = Date(timeIntervalSince1970: 1_795_000_000)
        #expect(zip(ids, ids.dropFirst()).allSatisfy { bytes($0).lexicographicallyPrecedes(bytes($1)) })
        let same = (0..<1_000).map { _ in UUID.timeOrdered(at: start) }
        #expect(Set(same).count == 1_000)
        // 74 random bits: across the same instant, every one of them varies.
        let varying = same.map(bytes).reduce(into: [UInt8](repeating: 0, count: 16)) { seen, id in
            for index in 0..<16 { seen[index] |= id[index] ^ bytes(same[0])[index] }
        }
        #expect(varying == [0, 0, 0, 0, 0, 0, 0x0F, 0xFF, 0x3F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])
    }

    @Test func aBatchSortsInTheOrderMadeWithinOneMillisecondAndBatchesDiffer() {
        func bytes(_ id: UUID) -> [UInt8] { withUnsafeBytes(of: id.uuid) { Array($0) } }
        let instant = Date(timeIntervalSince1970: 1_795_000_000.1235)
        let batch = UUID.timeOrdered(at: instant, count: 5_000)
        #expect(batch.count == 5_000)
        #expect(zip(batch, batch.dropFirst()).allSatisfy { bytes($0).lexicographicallyPrecedes(bytes($1)) })
        for id in [batch[0], batch[4_999]] {
            let raw = bytes(id)
            #expect(raw[0..<6].reduce(UInt64(0)) { $0 << 8 | UInt64($1) } == 1_795_000_000_123)
            #expect(raw[6] >> 4 == 7 && raw[8] >> 6 == 0b10)
        }
        // Each batch starts at a random place: two batches of one instant share no id.
        let other = UUID.timeOrdered(at: instant, count: 5_000)
        #expect(Set(batch).isDisjoint(with: other))
        #expect(UUID.timeOrdered(at: instant, count: 0).isEmpty && UUID.timeOrdered(at: instant, count: -3).isEmpty)
        // A date no millisecond count of 48 bits holds gives the largest, never a trap.
        #expect(bytes(UUID.timeOrdered(at: Date(timeIntervalSince1970: 1e12), count: 1)[0])[0..<6] == [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])
    }
}
