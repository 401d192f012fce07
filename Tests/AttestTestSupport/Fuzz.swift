import Foundation

/// SplitMix64: small, seedable, good enough to pick inputs; the same seed gives the same cases.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    public mutating func pick<T>(_ items: [T]) -> T { items[Int.random(in: 0..<items.count, using: &self)] }
    public mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &self) < p }
}

/// Inputs for the parsers' fuzz tests: random bytes, and valid inputs mutated the way bugs are
/// found (bytes flipped, dropped, repeated, and tokens that broke parsers before spliced in).
/// `ATTEST_FUZZ_SEED=n` replays another run; `ATTEST_FUZZ_CASES=n` runs longer (release checks).
public enum Fuzz {
    public static let seed = ProcessInfo.processInfo.environment["ATTEST_FUZZ_SEED"].flatMap { UInt64($0) } ?? 20_261_123

    /// Cases per property: thousands in CI; more with `ATTEST_FUZZ_CASES`.
    public static func cases(_ standard: Int) -> Int {
        ProcessInfo.processInfo.environment["ATTEST_FUZZ_CASES"].flatMap { Int($0) }.map { max($0, 1) } ?? standard
    }

    /// Text that made parsers trap or misread elsewhere: huge and odd numbers, escapes,
    /// surrogates, invalid UTF-8, separators of the formats under test.
    public static let interesting: [[UInt8]] =
        [
            "1e300", "-1e300", "1e309", "9223372036854775807", "9223372036854775808", "-9223372036854775809",
            "18446744073709551616", "9007199254740993", "1e-400", "-0", "0.5", "NaN", "Infinity", "\"", "\\", "\\u0000",
            "\\ud800", "\\udc00", "\\uD83D\\uDE00", "{", "}", "[", "]", ",", ":", "null", "true", ".", "=", "-", "_", "+",
            "/", "\r\n", "\n", "\"\"", ",,", "0000-00-00", "2026-02-30", "9999-12-31", "r.", "y.", "99999999999999999999",
            "@", "@@", ";", "lat", "lon", "alg", "none", "HS256", "kid", "exp", "iat", "\u{202E}", "é",
        ].map { Array($0.utf8) } + [[0x00], [0xFF], [0xC0, 0x80], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xE2, 0x82]]

    /// 1 to 4 mutations of `input`.
    public static func mutate(_ input: [UInt8], using g: inout SeededGenerator) -> [UInt8] {
        var bytes = input
        for _ in 0..<Int.random(in: 1...4, using: &g) {
            let position = bytes.isEmpty ? 0 : Int.random(in: 0...bytes.count, using: &g)
            switch Int.random(in: 0..<7, using: &g) {
            case 0 where !bytes.isEmpty:  // flip a bit
                let index = min(position, bytes.count - 1)
                bytes[index] ^= 1 << UInt8.random(in: 0..<8, using: &g)
            case 1 where !bytes.isEmpty:  // any byte
                bytes[min(position, bytes.count - 1)] = UInt8.random(in: 0...255, using: &g)
            case 2:  // splice in a known troublemaker
                bytes.insert(contentsOf: g.pick(interesting), at: position)
            case 3 where position < bytes.count:  // drop a run
                bytes.removeSubrange(position..<min(bytes.count, position + Int.random(in: 1...8, using: &g)))
            case 4 where position < bytes.count:  // repeat a run
                let run = Array(bytes[position..<min(bytes.count, position + Int.random(in: 1...16, using: &g))])
                bytes.insert(contentsOf: run, at: position)
            case 5:  // cut short
                bytes.removeSubrange(position...)
            default:  // replace a run with a troublemaker
                let end = min(bytes.count, position + Int.random(in: 0...4, using: &g))
                bytes.replaceSubrange(position..<end, with: g.pick(interesting))
            }
        }
        return bytes
    }

    /// `count` random bytes drawn from `alphabet` (any byte when nil), 0 to `maxLength` long.
    public static func randomBytes(maxLength: Int, alphabet: [UInt8]? = nil, using g: inout SeededGenerator) -> [UInt8] {
        (0..<Int.random(in: 0...maxLength, using: &g)).map { _ in
            alphabet.map { g.pick($0) } ?? UInt8.random(in: 0...255, using: &g)
        }
    }

    /// Inputs for one property: random bytes (a quarter), mutations of the seeds (the rest).
    public static func inputs(seeds: [[UInt8]], count: Int, alphabet: [UInt8]? = nil, seed: UInt64 = Fuzz.seed) -> [[UInt8]] {
        var g = SeededGenerator(seed: seed)
        return (0..<count).map { index in
            index % 4 == 0 ? randomBytes(maxLength: 64, alphabet: alphabet, using: &g) : mutate(g.pick(seeds), using: &g)
        }
    }
}
