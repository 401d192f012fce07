import AttestPlugins
import Foundation
import Tenancy

/// How much one member may write and keep: bounds that keep one member from filling the
/// server's memory or the database for every campus. A campus changes them in its settings
/// (`attest campus set <slug> settings`): `journalEntriesPerDay`, `episodesPerDay`,
/// `recordingMegabytes`, `openLinks`, each a whole number; anything else keeps the default.
public struct MemberQuotas: Sendable, Equatable {
    /// Journal entries written in any 24 hours. Default 50.
    public var entriesPerDay = 50
    /// Episodes started in any 24 hours. Default 50.
    public var episodesPerDay = 50
    /// Bytes of recordings kept, all entries together. Default 50 MiB (ten of the longest).
    public var recordingBytes = 50 * 1024 * 1024
    /// Shared links open at once (neither expired nor revoked). Default 20.
    public var openLinks = 20

    public init() {}

    /// The quotas of `campus`: its settings', else the defaults.
    public init(campus: Campus) {
        self.init()
        let settings = campus.settings.bytes.withUnsafeBytes { try? JSONValue(parsing: $0) }
        func whole(_ name: String) -> Int? { Self.whole(settings?[name], in: Self.bounds[name] ?? 0...0) }
        entriesPerDay = whole("journalEntriesPerDay") ?? entriesPerDay
        episodesPerDay = whole("episodesPerDay") ?? episodesPerDay
        recordingBytes = whole("recordingMegabytes").map { $0 * 1024 * 1024 } ?? recordingBytes
        openLinks = whole("openLinks") ?? openLinks
    }

    /// The keys of a campus's `settings` the quotas read.
    public static var settingKeys: [String] { bounds.keys.sorted() }

    /// The settings' keys and the whole numbers each may be.
    static let bounds: [String: ClosedRange<Int>] = [
        "journalEntriesPerDay": 1...100_000, "episodesPerDay": 1...100_000, "recordingMegabytes": 5...10_000, "openLinks": 1...1_000,
    ]

    static func whole(_ value: JSONValue?, in range: ClosedRange<Int>) -> Int? {
        guard case .number(let number)? = value, let whole = Int(exactly: number), range.contains(whole) else { return nil }
        return whole
    }

    /// What is wrong with the quotas' keys among a campus's new `settings`, each as "key: what
    /// it must be" (a key given null is being removed): what `attest campus set … settings`
    /// refuses, where the quotas would quietly keep their defaults.
    public static func problems(in settings: [String: JSONValue]) -> [String] {
        bounds.keys.sorted().compactMap { key in
            guard let value = settings[key], value != .null, let range = bounds[key], whole(value, in: range) == nil else { return nil }
            return "\(key): a whole number from \(range.lowerBound) to \(range.upperBound)"
        }
    }

    /// A quota a request would go past, named with its limit.
    public enum Exceeded: Error, Sendable, Equatable, CustomStringConvertible {
        case entriesPerDay(Int)
        case episodesPerDay(Int)
        case recordingBytes(limit: Int, kept: Int)
        case openLinks(Int)

        public var description: String {
            switch self {
            case .entriesPerDay(let limit):
                "you wrote \(limit) journal entries in the last 24 hours, as many as this campus allows: write more tomorrow, or add to an entry"
            case .episodesPerDay(let limit):
                "you started \(limit) episodes in the last 24 hours, as many as this campus allows: try again tomorrow"
            case .recordingBytes(let limit, let kept):
                "your recordings may take \(limit / (1024 * 1024)) MB in all and keep \(kept / (1024 * 1024)) MB already: delete a recording you no longer need"
            case .openLinks(let limit):
                "you have \(limit) open links, as many as this campus allows: revoke one (DELETE …/me/shares/{id}) or wait for one to expire"
            }
        }
    }
}
