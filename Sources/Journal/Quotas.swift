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
        func whole(_ name: String, _ range: ClosedRange<Int>) -> Int? {
            guard case .number(let number)? = settings?[name], number.rounded() == number,
                number >= Double(range.lowerBound), number <= Double(range.upperBound)
            else { return nil }
            return Int(exactly: number)
        }
        entriesPerDay = whole("journalEntriesPerDay", 1...100_000) ?? entriesPerDay
        episodesPerDay = whole("episodesPerDay", 1...100_000) ?? episodesPerDay
        recordingBytes = whole("recordingMegabytes", 5...10_000).map { $0 * 1024 * 1024 } ?? recordingBytes
        openLinks = whole("openLinks", 1...1_000) ?? openLinks
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
