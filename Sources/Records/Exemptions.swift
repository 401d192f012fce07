import AttestPlugins
import AttestPostgres
import Foundation
import Tenancy

extension HealthRecords {
    /// An exemption as its member and the health officers see it; `note` opened.
    public struct Exemption: Sendable, Equatable {
        public enum Status: String, Sendable, CaseIterable {
            /// `ended`: approved, then ended by a health officer before its last day.
            case pending, approved, denied, ended
        }

        public var id: UUID
        public var kind: HealthStatus.ExemptionKind
        public var note: String
        public var status: Status
        public var requestedAt: Date
        /// The last day an approved exemption holds.
        public var expires: LocalDate?
        /// The health officer's words for the member.
        public var reason: String
        public var decidedAt: Date?
        /// Whose it is: for health officers' lists (empty in the member's own).
        public var email: String
        public var name: String
    }

    /// The longest note and reason.
    public static let maxNote = 2_000, maxReason = 500
    /// The furthest last day an exemption may be given, in days from today (two years).
    public static let maxExemptionDays = 731

    static func noteContext(_ campus: CampusID, _ id: UUID) -> String { "exemption-note|\(campus)|\(id.lowercasedText)" }

    /// The exemptions' notes, for `attest keys rotate-kek`.
    public static let sealedColumns: [SealedColumn] = [
        SealedColumn(table: "exemptions", column: "note", key: [.uuid("user_id"), .uuid("id")], scope: .campus) { campus, _, row in
            noteContext(campus, try row.decode("id"))
        }
    ]

    func requireKEK() throws -> KeyEncryptionKey {
        guard let kek else { throw RecordsError.sealingUnavailable }
        return kek
    }

    /// The member asks for an exemption (one waits at a time), audited; the note sealed.
    public func requestExemption(
        campus: Campus, user: UserID, kind: HealthStatus.ExemptionKind, note: String, actor: String, now: Date
    ) async throws -> Exemption {
        let kek = try requireKEK()
        let id = UUID()
        let sealed = try SealedSecret.seal(Data(note.utf8), under: kek, context: Self.noteContext(campus.id, id))
        return try await client.withTransaction(campus: campus.id.rawValue) { connection in
            let rows = try await connection.query(
                """
                INSERT INTO exemptions (campus_id, user_id, id, kind, note, requested_at)
                VALUES (\(campus.id), \(user), \(id), \(kind.rawValue), \(sealed), \(now))
                ON CONFLICT (campus_id, user_id) WHERE status = 'pending' DO NOTHING
                RETURNING id
                """)
            guard !rows.isEmpty else {
                throw RecordsError.conflict("you have a request waiting already: a health officer decides it before you ask again")
            }
            try await AuditLog.record(
                connection, campus: campus.id, actor: actor, action: "exemption.request", target: user.description,
                details: ["id": id.lowercasedText, "kind": kind.rawValue])
            return Exemption(
                id: id, kind: kind, note: note, status: .pending, requestedAt: now, expires: nil, reason: "", decidedAt: nil, email: "",
                name: "")
        }
    }

    /// The member's own exemptions, newest first.
    public func exemptions(campus: Campus, user: UserID) async throws -> [Exemption] {
        let kek = try requireKEK()
        let rows = try await client.query(
            """
            SELECT id, kind, note, status, requested_at, expires_on, reason, decided_at, '' AS email, '' AS display_name
            FROM exemptions WHERE campus_id = \(campus.id) AND user_id = \(user)
            ORDER BY requested_at DESC, id LIMIT 50
            """, campus: campus.id.rawValue)
        return try rows.map { try Self.exemption($0, campus: campus.id, kek: kek) }
    }

    /// The campus's exemptions of `status`, oldest first (at most 500), with their members;
    /// audited (each names a person and opens their note). `inForceOn`: only those approved
    /// that still hold that day, by their last day, notes left sealed (empty): the list that
    /// moves or ends them shows none.
    public func exemptions(campus: Campus, status: Exemption.Status, inForceOn day: LocalDate? = nil, actor: String) async throws
        -> [Exemption]
    {
        let kek = try requireKEK()
        return try await client.withTransaction(campus: campus.id.rawValue) { connection in
            let rows = try await connection.query(
                """
                SELECT e.id, e.kind, CASE WHEN \(day)::date IS NULL THEN e.note END AS note, e.status, e.requested_at, e.expires_on, e.reason, e.decided_at, u.email, u.display_name
                FROM exemptions e JOIN users u ON u.campus_id = e.campus_id AND u.id = e.user_id
                WHERE e.campus_id = \(campus.id) AND e.status = \(status.rawValue)
                  AND (\(day)::date IS NULL OR e.expires_on >= \(day)::date)
                ORDER BY CASE WHEN \(day)::date IS NOT NULL THEN e.expires_on END, e.requested_at, e.id LIMIT 500
                """)
            try await AuditLog.record(
                connection, campus: campus.id, actor: actor, action: "exemptions.read", target: status.rawValue,
                details: ["count": "\(rows.count)"])
            return try rows.map { try Self.exemption($0, campus: campus.id, kek: kek) }
        }
    }

    static func exemption(_ row: PostgresRow, campus: CampusID, kek: KeyEncryptionKey) throws -> Exemption {
        let id: UUID = try row.decode("id")
        let note = try row.decode("note", as: Data?.self).map { try SealedSecret.open($0, with: kek, context: noteContext(campus, id)) }
        return Exemption(
            id: id, kind: HealthStatus.ExemptionKind(rawValue: try row.decode("kind")) ?? .other,
            note: note.map { String(decoding: $0, as: UTF8.self) } ?? "",
            status: Exemption.Status(rawValue: try row.decode("status")) ?? .pending,
            requestedAt: try row.decode("requested_at"), expires: try row.decode("expires_on"), reason: try row.decode("reason"),
            decidedAt: try row.decode("decided_at"), email: try row.decode("email"), name: try row.decode("display_name"))
    }

    /// A health officer decides a waiting request: approved until `expires` (today or later,
    /// within two years) or denied, with words for the member; audited, and the member's
    /// status recomputed. An approved one may be decided again: its last day moved (approved
    /// with another `expires`, audited as `exemption.change`) or ended (denied: `ended` from
    /// then on, audited as `exemption.revoke`: one approved in error, or no longer needed). A
    /// denied or ended one stays so; the member may ask again.
    public func decideExemption(
        campus: Campus, id: UUID, approve: Bool, expires: LocalDate?, reason: String, actor: String, now: Date
    ) async throws {
        let today = campus.localDate(at: now)
        if approve {
            guard let expires else { throw RecordsError.invalid([.init("expires", "is required to approve: the last day it holds")]) }
            guard expires >= today, today.days(until: expires) <= Self.maxExemptionDays else {
                throw RecordsError.invalid([.init("expires", "must be from today to two years ahead")])
            }
        }
        let policy = RecordsPolicy(campus: campus)
        let changed = try await changingRecords(of: campus) { connection in
            let before = try await connection.query(
                "SELECT status, expires_on FROM exemptions WHERE campus_id = \(campus.id) AND id = \(id) FOR UPDATE")
            guard let was = before.first else {
                throw RecordsError.notFound("no such exemption request at this campus: GET …/health/exemptions lists them")
            }
            let status: String = try was.decode("status"), previous = try was.decode("expires_on", as: LocalDate?.self)
            guard status != "denied" else {
                throw RecordsError.conflict(
                    "this request was denied already and stays denied: the member may ask again (POST …/me/exemptions)")
            }
            guard status != "ended" else {
                throw RecordsError.conflict(
                    "this exemption was ended already and stays ended: the member may ask again (POST …/me/exemptions)")
            }
            // A last day moved with no words keeps the words the member read with the approval.
            let keepsReason = approve && status == "approved" && reason.isEmpty
            let rows = try await connection.query(
                """
                UPDATE exemptions SET status = \(approve ? "approved" : status == "approved" ? "ended" : "denied"), expires_on = \(approve ? expires : nil),
                       reason = CASE WHEN \(keepsReason) THEN reason ELSE \(reason) END, decided_by = \(actor), decided_at = \(now)
                WHERE campus_id = \(campus.id) AND id = \(id)
                RETURNING user_id, kind
                """)
            guard let row = rows.first else { throw RecordsError.notFound("no such exemption request at this campus") }
            let user: UUID = try row.decode("user_id")
            let action =
                status == "pending"
                ? (approve ? "exemption.approve" : "exemption.deny") : (approve ? "exemption.change" : "exemption.revoke")
            var details = ["id": id.lowercasedText, "kind": try row.decode("kind", as: String.self), "expires": expires?.description ?? ""]
            if status == "approved" { details["was"] = previous?.description ?? "" }
            try await AuditLog.record(
                connection, campus: campus.id, actor: actor, action: action, target: user.lowercasedText, details: details)
            return try await Self.recompute(connection, campus: campus, users: [user], policy: policy)
        }
        if changed > 0 { generations?.advance(campus.id) }
    }
}
