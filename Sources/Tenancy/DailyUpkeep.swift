import AttestPlugins
import Foundation

/// Work done once a campus-local day per campus by whichever server claims the day (the
/// retention service runs it after the retention purge): each module cleans its own tables.
public protocol DailyUpkeep: Sendable {
    /// Named in the upkeep's log line.
    var name: String { get }
    /// Does the day's work for `campus`; returns counts worth logging (`rows_deleted: 3`).
    func run(campus: Campus, now: Date) async throws -> [String: Int]
}

/// A member just erased, as the modules that keep rows naming them without a foreign key to
/// their `users` row find those rows: by id, email, or the campus's own id for them.
public struct ErasedMember: Sendable {
    public var id: UserID
    public var email: String
    public var memberID: String?

    public init(id: UserID, email: String, memberID: String?) { (self.id, self.email, self.memberID) = (id, email, memberID) }
}

/// What a module forgets of an erased member beyond what their `users` row's foreign keys
/// cascade to (a laboratory's results waiting under their email, events in the outbox naming
/// them), run after the erasure commits by every path that erases (`attest user erase`, SCIM's
/// `DELETE` under `scim-delete: erase`). Idempotent: running it again finds nothing.
public protocol MemberErasure: Sendable {
    /// Does the forgetting; returns counts worth saying (`outboxEvents: 3`).
    func forget(_ member: ErasedMember, campus: Campus) async throws -> [String: Int]
}
