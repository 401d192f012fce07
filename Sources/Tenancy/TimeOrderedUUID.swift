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
    /// The smallest version 7 UUID of `instant`'s millisecond: every id `timeOrdered(at:)`
    /// makes at or after `instant` sorts at or after it (a lower bound for a range of ids).
    public static func timeOrderedFloor(at instant: Date) -> UUID {
        // 48 bits of milliseconds, as the version 7 layout holds; no trapping conversion.
        let milliseconds = UInt64(exactly: min(max(0, instant.timeIntervalSince1970 * 1000), 281_474_976_710_655).rounded(.down)) ?? 0
        func byte(_ shift: UInt64) -> UInt8 { UInt8(truncatingIfNeeded: milliseconds >> shift) }
        return UUID(uuid: (byte(40), byte(32), byte(24), byte(16), byte(8), byte(0), 0x70, 0, 0x80, 0, 0, 0, 0, 0, 0, 0))
    }
}
