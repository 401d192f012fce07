import AttestPostgres
import Foundation

/// The tenancy layer over the database wrapper: a transaction scoped to a campus sets
/// `attest.campus_id`, the setting every row-level security policy of the schema reads, so
/// the database admits that campus's rows only. The wrapper itself knows nothing of campuses.
public enum CampusScope {
    /// The per-transaction setting the policies read.
    public static let settingName = "attest.campus_id"

    /// The per-transaction setting a member's own tables (the journal) also read: only that
    /// member's rows are visible.
    public static let memberSettingName = "attest.user_id"

    /// The settings of a transaction scoped to one member of `campus`: their own rows only.
    public static func settings(_ campus: UUID, member: UUID) -> TransactionSettings {
        TransactionSettings([(settingName, campus.lowercasedText), (memberSettingName, member.lowercasedText)])
    }

    /// The settings of a transaction scoped to `campus` (none without one).
    public static func settings(_ campus: UUID?) -> TransactionSettings {
        campus.map { TransactionSettings([(settingName, $0.lowercasedText)]) } ?? .none
    }
}

extension PostgresClient {
    /// `BEGIN … COMMIT` scoped to `campus` (row-level security admits its rows only).
    public func withTransaction<Result: Sendable>(
        campus: UUID?, _ body: (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await withTransaction(settings: CampusScope.settings(campus), body)
    }

    /// One statement in a transaction scoped to `campus`, in one round trip.
    @discardableResult
    public func query(_ sql: SQL, campus: UUID?) async throws -> PostgresRows {
        try await query(sql, settings: CampusScope.settings(campus))
    }
}

extension PostgresConnection {
    /// A transaction on this connection scoped to `campus`.
    public func transaction<Result: Sendable>(
        campus: UUID?, _ body: (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await transaction(settings: CampusScope.settings(campus), body)
    }
}

extension PipelineUnit {
    /// Statements committed as one, scoped to `campus`.
    public init(campus: UUID?, statements: [SQL]) {
        self.init(settings: CampusScope.settings(campus), statements: statements)
    }
}
