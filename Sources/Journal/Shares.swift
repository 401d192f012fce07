import AttestPlugins
import AttestPostgres
import Crypto
import Foundation
import Tenancy

/// A link a member gave a clinician: a read-only view of a date range of their journal and
/// episodes, until it expires or is revoked, with every opening.
public struct JournalShare: Sendable, Equatable {
    public struct Opening: Sendable, Equatable {
        public var openedAt: Date
        public var format: String
    }

    public var id: UUID
    public var from: LocalDate
    public var to: LocalDate
    public var expiresAt: Date
    public var revokedAt: Date?
    public var createdAt: Date
    public var openings: [Opening]

    /// `active`, `expired` or `revoked` at `now`.
    public func status(at now: Date) -> String {
        if revokedAt != nil { return "revoked" }
        return expiresAt <= now ? "expired" : "active"
    }

    /// The shortest and longest a link may live.
    public static let lifetimes: ClosedRange<Int> = 3_600...(30 * 86_400)
}

/// Shared links (`journal_shares`, `journal_share_openings`). The member's own calls run
/// scoped to them; a clinician's opening goes through `attest_journal_share`, the schema's
/// door from a token's hash to its share, then records the opening in the member's log.
/// Only a token's SHA-256 is stored; the token itself is shown once, in the link.
public struct JournalShareStore: Sendable {
    let client: PostgresClient

    public init(client: PostgresClient) { self.client = client }

    static func hash(_ token: String) -> Data { Data(SHA256.hash(data: Data(token.utf8))) }

    /// 32 random bytes, base64url without padding: 43 characters.
    static func newToken() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Whether `token` has the shape of one this store gives out.
    public static func isWellFormed(_ token: String) -> Bool {
        token.utf8.count == 43
            && token.utf8.allSatisfy {
                (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2D || $0 == 0x5F
            }
    }

    /// A new link for `from`…`to`, living `seconds`; returns the share and its token.
    public func create(
        campus: CampusID, user: UserID, actor: String, from: LocalDate, to: LocalDate, seconds: Int, now: Date,
        quotas: MemberQuotas = MemberQuotas()
    ) async throws -> (share: JournalShare, token: String) {
        let id = UUID.timeOrdered(at: now), token = Self.newToken()
        let expires = now.addingTimeInterval(
            TimeInterval(min(max(seconds, JournalShare.lifetimes.lowerBound), JournalShare.lifetimes.upperBound)))
        try await client.withTransaction(settings: CampusScope.settings(campus.rawValue, member: user.rawValue)) { connection in
            let open: Int =
                try await connection.query(
                    """
                    SELECT count(*) AS n FROM journal_shares
                    WHERE campus_id = \(campus) AND user_id = \(user.rawValue) AND revoked_at IS NULL AND expires_at > \(now)
                    """
                ).first?.decode("n") ?? 0
            guard open < quotas.openLinks else { throw MemberQuotas.Exceeded.openLinks(quotas.openLinks) }
            try await connection.query(
                """
                INSERT INTO journal_shares (campus_id, user_id, id, token_hash, from_date, to_date, expires_at, created_at)
                VALUES (\(campus), \(user.rawValue), \(id), \(Self.hash(token)), \(from), \(to), \(expires), \(now))
                """)
            // That a share was made, nothing of what it shows.
            try await AuditLog.record(connection, campus: campus, actor: actor, action: "member.share", target: "")
        }
        return (JournalShare(id: id, from: from, to: to, expiresAt: expires, revokedAt: nil, createdAt: now, openings: []), token)
    }

    /// The member's links, newest first, each with its openings (newest first).
    public func list(campus: CampusID, user: UserID) async throws -> [JournalShare] {
        let (shares, openings) = try await client.withTransaction(settings: CampusScope.settings(campus.rawValue, member: user.rawValue)) {
            connection in
            (
                try await connection.query(
                    """
                    SELECT id, from_date, to_date, expires_at, revoked_at, created_at FROM journal_shares
                    WHERE campus_id = \(campus) AND user_id = \(user.rawValue) ORDER BY created_at DESC, id DESC LIMIT 200
                    """),
                try await connection.query(
                    """
                    SELECT share_id, opened_at, format FROM journal_share_openings
                    WHERE campus_id = \(campus) AND user_id = \(user.rawValue) ORDER BY opened_at DESC, id DESC LIMIT 5000
                    """)
            )
        }
        var byShare: [UUID: [JournalShare.Opening]] = [:]
        for row in openings {
            byShare[try row.decode("share_id", as: UUID.self), default: []].append(
                JournalShare.Opening(openedAt: try row.decode("opened_at"), format: try row.decode("format")))
        }
        return try shares.map { row in
            let id = try row.decode("id", as: UUID.self)
            return JournalShare(
                id: id, from: try row.decode("from_date"), to: try row.decode("to_date"), expiresAt: try row.decode("expires_at"),
                revokedAt: try row.decode("revoked_at"), createdAt: try row.decode("created_at"), openings: byShare[id] ?? [])
        }
    }

    /// Revokes a link at once; false when the member has no such link (or it was revoked before).
    public func revoke(campus: CampusID, user: UserID, id: UUID, now: Date) async throws -> Bool {
        try await client.withTransaction(settings: CampusScope.settings(campus.rawValue, member: user.rawValue)) { connection in
            try await connection.query(
                """
                UPDATE journal_shares SET revoked_at = \(now)
                WHERE campus_id = \(campus) AND user_id = \(user.rawValue) AND id = \(id) AND revoked_at IS NULL
                """
            ).affectedRows == 1
        }
    }

    /// How many times one link may be opened: enough for a clinician and a colleague, not a
    /// way to pull a member's record without end.
    public static let maxOpenings = 20

    /// What a link shows before it is opened: whose record, which range, until when, and how
    /// often it was opened.
    public struct Described: Sendable, Equatable {
        public var user: UserID
        public var id: UUID
        public var from: LocalDate
        public var to: LocalDate
        public var expiresAt: Date
        public var openings: Int
    }

    /// The link `token` names at `campus`, still open at `now`, without opening it; nil for a
    /// token that is malformed, unknown here, expired, revoked, or whose member is inactive.
    public func describe(campus: CampusID, token: String, now: Date) async throws -> Described? {
        guard Self.isWellFormed(token) else { return nil }
        let rows = try await client.query("SELECT * FROM attest_journal_share(\(campus), \(Self.hash(token)))")
        guard let row = rows.first, try row.decode("revoked_at", as: Date?.self) == nil, try row.decode("expires_at", as: Date.self) > now
        else {
            return nil
        }
        let user = UserID(try row.decode("user_id", as: UUID.self)), id = try row.decode("id", as: UUID.self)
        let openings: Int =
            try await client.query(
                "SELECT count(*) AS n FROM journal_share_openings WHERE campus_id = \(campus) AND user_id = \(user.rawValue) AND share_id = \(id)",
                settings: CampusScope.settings(campus.rawValue, member: user.rawValue)
            ).first?.decode("n") ?? 0
        return Described(
            user: user, id: id, from: try row.decode("from_date"), to: try row.decode("to_date"), expiresAt: try row.decode("expires_at"),
            openings: openings)
    }

    /// What opening a link came to.
    public enum Opened: Sendable, Equatable {
        /// The member and range to export; the opening is in their log.
        case opened(user: UserID, from: LocalDate, to: LocalDate)
        /// The link was opened `maxOpenings` times already; nothing was recorded.
        case exhausted
    }

    /// Opens the link `token` names at `campus` now, recording the opening (`format`) in the
    /// member's log, at most `maxOpenings` times a link; nil for a token that is malformed,
    /// unknown here, expired, revoked or whose member is inactive.
    public func open(campus: CampusID, token: String, format: String, now: Date) async throws -> Opened? {
        guard let link = try await describe(campus: campus, token: token, now: now) else { return nil }
        return try await client.withTransaction(settings: CampusScope.settings(campus.rawValue, member: link.user.rawValue)) { connection in
            // The link's row, locked: two openings at once count one after the other.
            let locked = try await connection.query(
                """
                SELECT id FROM journal_shares WHERE campus_id = \(campus) AND user_id = \(link.user.rawValue) AND id = \(link.id)
                  AND revoked_at IS NULL FOR UPDATE
                """)
            guard !locked.isEmpty else { return nil }
            let opened: Int =
                try await connection.query(
                    """
                    SELECT count(*) AS n FROM journal_share_openings
                    WHERE campus_id = \(campus) AND user_id = \(link.user.rawValue) AND share_id = \(link.id)
                    """
                ).first?.decode("n") ?? 0
            guard opened < Self.maxOpenings else { return .exhausted }
            try await connection.query(
                """
                INSERT INTO journal_share_openings (campus_id, user_id, share_id, opened_at, format)
                VALUES (\(campus), \(link.user.rawValue), \(link.id), \(now), \(format))
                """)
            return .opened(user: link.user, from: link.from, to: link.to)
        }
    }
}
