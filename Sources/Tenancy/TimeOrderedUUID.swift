import Foundation

extension UUID {
    /// A version 7 UUID (RFC 9562): the Unix time of `instant` in milliseconds, then 74
    /// random bits. Ids made one after another sort one after another, so a primary-key
    /// index takes each new row on its rightmost pages instead of a random page.
    public static func timeOrdered(at instant: Date) -> UUID {
        let milliseconds = UInt64(max(0, instant.timeIntervalSince1970 * 1000))
        var random = SystemRandomNumberGenerator()
        let high = random.next() as UInt64, low = random.next() as UInt64
        func byte(_ value: UInt64, _ shift: UInt64) -> UInt8 { UInt8(truncatingIfNeeded: value >> shift) }
        return UUID(
            uuid: (
                byte(milliseconds, 40), byte(milliseconds, 32), byte(milliseconds, 24), byte(milliseconds, 16),
                byte(milliseconds, 8), byte(milliseconds, 0),
                0x70 | (byte(high, 0) & 0x0F), byte(high, 8),  // version 7, then 12 random bits
                0x80 | (byte(high, 16) & 0x3F), byte(high, 24),  // variant 10, then 62 random bits
                byte(high, 32), byte(high, 40), byte(low, 0), byte(low, 8), byte(low, 16), byte(low, 24)
            ))
    }
}

extension UUID {
    /// `count` version 7 UUIDs (RFC 9562) of `instant`'s millisecond that sort in the order
    /// made: the 62 bits after the variant are a random start plus the id's place (a counter,
    /// RFC 9562 §6.2 method 1), the 12 before them random. A batch's rows go to an index's
    /// rightmost pages one after another, not to random places among the batch's own pages
    /// as ids random within one millisecond would.
    public static func timeOrdered(at instant: Date, count: Int) -> [UUID] {
        let milliseconds = UInt64(exactly: min(max(0, instant.timeIntervalSince1970 * 1000), 281_474_976_710_655).rounded(.down)) ?? 0
        var random = SystemRandomNumberGenerator()
        let high = random.next() as UInt64
        // Room for 2^61 ids above the start: the counter never carries into the variant.
        let start = (random.next() as UInt64) & (1 << 61 - 1)
        func byte(_ value: UInt64, _ shift: UInt64) -> UInt8 { UInt8(truncatingIfNeeded: value >> shift) }
        return (0..<Swift.max(0, count)).map { place in
            let low = start &+ UInt64(truncatingIfNeeded: place)
            return UUID(
                uuid: (
                    byte(milliseconds, 40), byte(milliseconds, 32), byte(milliseconds, 24), byte(milliseconds, 16),
                    byte(milliseconds, 8), byte(milliseconds, 0),
                    0x70 | (byte(high, 8) & 0x0F), byte(high, 0),  // version 7, then 12 random bits
                    0x80 | (byte(low, 56) & 0x3F), byte(low, 48),  // variant 10, then the counter's 62 bits
                    byte(low, 40), byte(low, 32), byte(low, 24), byte(low, 16), byte(low, 8), byte(low, 0)
                ))
        }
    }

    /// The smallest version 7 UUID of `instant`'s millisecond: every id `timeOrdered(at:)`
    /// makes at or after `instant` sorts at or after it (a lower bound for a range of ids).
    public static func timeOrderedFloor(at instant: Date) -> UUID {
        // 48 bits of milliseconds, as the version 7 layout holds; no trapping conversion.
        let milliseconds = UInt64(exactly: min(max(0, instant.timeIntervalSince1970 * 1000), 281_474_976_710_655).rounded(.down)) ?? 0
        func byte(_ shift: UInt64) -> UInt8 { UInt8(truncatingIfNeeded: milliseconds >> shift) }
        return UUID(uuid: (byte(40), byte(32), byte(24), byte(16), byte(8), byte(0), 0x70, 0, 0x80, 0, 0, 0, 0, 0, 0, 0))
    }
}
