import AttestPlugins
import AttestPostgres
import Foundation
import Tenancy

/// A member's private health profile: what the headache diary reads episodes with. Metric
/// (pages show other units by language); each part optional.
public struct HealthProfile: Sendable, Equatable, Codable {
    public var birthYear: Int?
    public var heightCm: Double?
    public var weightKg: Double?

    public init(birthYear: Int? = nil, heightCm: Double? = nil, weightKg: Double? = nil) {
        (self.birthYear, self.heightCm, self.weightKg) = (birthYear, heightCm, weightKg)
    }

    public var isEmpty: Bool { birthYear == nil && heightCm == nil && weightKg == nil }

    /// Body-mass index (kg/m²) when height and weight are both given.
    public var bmi: Double? {
        guard let heightCm, let weightKg, heightCm > 0 else { return nil }
        let metres = heightCm / 100
        return weightKg / (metres * metres)
    }

    public static let heights: ClosedRange<Double> = 40...272
    public static let weights: ClosedRange<Double> = 2...650

    /// What is wrong with each part, by field, given the current year; empty when all is well.
    /// Heights and weights are kept to a tenth.
    public static func problems(birthYear: Int?, heightCm: Double?, weightKg: Double?, thisYear: Int) -> [(field: String, message: String)]
    {
        var problems: [(String, String)] = []
        if let birthYear, !(1900...thisYear).contains(birthYear) {
            problems.append(("birthYear", "must be a year from 1900 to \(thisYear)"))
        }
        if let heightCm, !(heightCm.isFinite && heights.contains(heightCm)) {
            problems.append(("heightCm", "must be a height in centimetres from 40 to 272"))
        }
        if let weightKg, !(weightKg.isFinite && weights.contains(weightKg)) {
            problems.append(("weightKg", "must be a weight in kilograms from 2 to 650"))
        }
        return problems
    }

    /// The profile with heights and weights rounded to a tenth.
    public var rounded: HealthProfile {
        HealthProfile(
            birthYear: birthYear, heightCm: heightCm.map { ($0 * 10).rounded() / 10 }, weightKg: weightKg.map { ($0 * 10).rounded() / 10 })
    }
}

/// Members' health profiles (`member_profiles`): sealed under the key-encryption key, bound to
/// the campus and the member, re-wrapped with the journal by `attest keys rotate-kek`, and
/// seen by that member only (row-level security names them in every transaction). No role
/// reads another member's: there is no such call.
public struct ProfileStore: Sendable {
    let client: PostgresClient
    let kek: KeyEncryptionKey?

    public init(client: PostgresClient, kek: KeyEncryptionKey?) {
        self.client = client
        self.kek = kek
    }

    static func context(_ campus: CampusID, _ user: UserID) -> String { "profile/\(campus)/\(user)" }

    /// The column this store seals, for `attest keys rotate-kek`.
    public static let sealedColumns: [SealedColumn] = [
        SealedColumn(table: "member_profiles", column: "sealed", key: [], scope: .member) { campus, member, _ in
            context(campus, try SealedColumn.require(member))
        }
    ]

    private func requireKEK() throws -> KeyEncryptionKey {
        guard let kek else { throw JournalError.sealingUnavailable }
        return kek
    }

    /// The member's profile; an empty one when they never gave it.
    public func profile(campus: CampusID, user: UserID) async throws -> HealthProfile {
        let rows = try await client.query(
            "SELECT sealed FROM member_profiles WHERE campus_id = \(campus) AND user_id = \(user.rawValue)",
            settings: CampusScope.settings(campus.rawValue, member: user.rawValue))
        guard let row = rows.first else { return HealthProfile() }
        let bytes = try SealedSecret.open(
            try row.decode("sealed", as: Data.self), with: try requireKEK(), context: Self.context(campus, user))
        return try JSONDecoder().decode(HealthProfile.self, from: bytes)
    }

    /// Keeps `profile` (rounded to a tenth) as the member's; an empty one removes the row.
    public func set(campus: CampusID, user: UserID, profile: HealthProfile, now: Date) async throws {
        let settings = CampusScope.settings(campus.rawValue, member: user.rawValue)
        if profile.isEmpty {
            try await client.query(
                "DELETE FROM member_profiles WHERE campus_id = \(campus) AND user_id = \(user.rawValue)", settings: settings)
            return
        }
        let sealed = try SealedSecret.seal(
            try JSONEncoder().encode(profile.rounded), under: try requireKEK(), context: Self.context(campus, user))
        try await client.query(
            """
            INSERT INTO member_profiles (campus_id, user_id, sealed, updated_at)
            VALUES (\(campus), \(user.rawValue), \(sealed), \(now))
            ON CONFLICT (campus_id, user_id) DO UPDATE SET sealed = EXCLUDED.sealed, updated_at = EXCLUDED.updated_at
            """, settings: settings)
    }
}
