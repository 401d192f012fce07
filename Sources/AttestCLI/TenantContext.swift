import AttestPostgres
import Foundation
import Identity
import Logging
import Tenancy

/// What a tenant command works with: the application-role client and the stores on it.
struct TenantContext {
    let client: PostgresClient
    let campuses: CampusStore
    let users: UserStore
    let sessions: SessionStore
    let issuers: OIDCIssuerStore
    let audit: AuditLog
    let logger: Logger

    /// `cli:<OS user>`, the actor the audit log records for the admin CLI.
    static var actor: String {
        if let entry = getpwuid(geteuid()), let name = entry.pointee.pw_name { return "cli:" + String(cString: name) }
        return "cli:uid-\(geteuid())"
    }

    /// Runs `body` with a context, closing the database connections afterwards. With
    /// `sealingWith`, `body` runs only once that key is found to be the deployment's
    /// (`checkDeploymentKey`).
    static func run<Result: Sendable>(
        database: DatabaseOptions, logging: LoggingOptions, sealingWith kek: KeyEncryptionKey? = nil,
        _ body: (TenantContext) async throws -> Result
    ) async throws -> Result {
        let logger = logging.makeLogger(label: "attest")
        let client = try database.applicationClient(logger: logger)
        let context = TenantContext(
            client: client, campuses: CampusStore(client: client), users: UserStore(client: client),
            sessions: SessionStore(client: client), issuers: OIDCIssuerStore(client: client), audit: AuditLog(client: client),
            logger: logger)
        return try await runningService(client) {
            if let kek { try await checkDeploymentKey(kek, client: client) }
            return try await body(context)
        }
    }

    /// Refuses a key-encryption key that opens no campus's badge keys while some campus has
    /// them: a command given another key (a copy-paste, another deployment's file) would seal
    /// what no server can open, and one campus made so stops every `attest serve` from starting.
    /// `attest_sealing_census` (the server's own start-up read) answers the campuses with a
    /// badge key under another key: under this one, at least one campus has none there. During
    /// a rotation (campus by campus) the old key passes while a campus is still under it and
    /// the new one once a campus is done: the old until `keys rotate-kek` has run (it re-wraps
    /// what was sealed meanwhile), the new one after.
    static func checkDeploymentKey(_ kek: KeyEncryptionKey, client: PostgresClient) async throws {
        let rows = try await client.query(
            """
            SELECT (SELECT count(*) FROM attest_sealing_census(\(kek.ids), \([String]()))) AS elsewhere,
                   (SELECT count(*) FROM attest_sealing_census(\([""]), \([String]()))) AS sealed
            """)
        guard let row = rows.first else { return }
        let elsewhere = try row.decode("elsewhere", as: Int.self), sealed = try row.decode("sealed", as: Int.self)
        guard sealed > 0, elsewhere == sealed else { return }
        throw CLIError(
            "the key-encryption key given (fingerprint \(kek.id)) is not this deployment's: no campus's badge keys are sealed under it. "
                + "Pass the key that sealed them (--kek-file or ATTEST_KEK_FILE; during a rotation, the old one until "
                + "`attest keys rotate-kek` has run); nothing was changed")
    }
}

/// Prints any JSON-compatible value on one line, keys sorted.
func printJSONObject(_ value: Any) {
    guard let data = try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .withoutEscapingSlashes]) else { return }
    say(String(decoding: data, as: UTF8.self))
}

extension Campus {
    /// The campus as the CLI's `--json` shows it.
    var jsonObject: [String: Any] {
        [
            "id": id.description, "slug": slug, "name": name, "timeZone": timeZone,
            "deadline": CampusFormats.clock(fromMinute: deadlineMinute),
            "reminder": CampusFormats.clock(fromMinute: reminderMinute), "emailDomains": emailDomains,
            "sessionLifetime": CampusFormats.duration(fromSeconds: sessionLifetimeSeconds), "retentionDays": retentionDays,
            "statsMinCount": statsMinCount,
            "settings": (try? JSONSerialization.jsonObject(with: Data(settings.bytes))) ?? [:],
            "createdAt": createdAt.ISO8601Format(), "region": communityRegion ?? NSNull(),
        ]
    }

    /// `key: value` lines for people.
    var textLines: [String] {
        [
            "slug:             \(slug)", "name:             \(name)", "id:               \(id)",
            "timezone:         \(timeZone)", "deadline:         \(CampusFormats.clock(fromMinute: deadlineMinute))",
            "reminder:         \(CampusFormats.clock(fromMinute: reminderMinute))",
            "email-domains:    \(emailDomains.isEmpty ? "(none: only issuers added with --allow-any-domain admit anyone)" : emailDomains.joined(separator: ","))",
            "session-lifetime: \(CampusFormats.duration(fromSeconds: sessionLifetimeSeconds))",
            "retention-days:   \(retentionDays)", "stats-min-count:  \(statsMinCount)", "settings:         \(settings.text)",
            "region:           \(communityRegion ?? "(none)")",
        ]
    }
}

extension User {
    var jsonObject: [String: Any] {
        [
            "id": id.description, "email": email, "displayName": displayName, "roles": roles.map(\.rawValue),
            "createdAt": createdAt.ISO8601Format(),
        ]
    }
}
