import Foundation
import Testing

/// One owner per table (docs/architecture.md, "Who owns which table"): a module's SQL names
/// only its own tables, and another module's through the owner's functions and fragments
/// (`OutboxEvents.insert`, `UserStore.memberChanges`). Read from the sources: every
/// `FROM`, `JOIN`, `INTO` and `UPDATE` of a table, outside comments.
@Suite("Table ownership")
struct TableOwnershipTests {
    static let owners: [String: [String]] = [
        "Tenancy": ["campuses", "campus_plugins", "audit_log"],
        "Community": ["testing_locations", "community_regions", "community_days", "member_places"],
        "Identity": [
            "users", "member_changes", "sessions", "campus_oidc_issuers", "id_token_uses", "sign_in_nonces", "machine_tokens",
            "directory_groups",
            "directory_group_members", "role_mappings", "guest_visits", "member_health",
        ],
        "Records": ["test_results", "isolations", "exemptions", "shc_directory", "shc_issuers", "vaccinations"],
        "Surveys": [
            "questionnaires", "attestations", "daily_stats", "daily_answer_counts", "purge_state", "badge_keys", "badge_subject_keys",
            "door_counts",
        ],
        "Notifications": ["notification_outbox", "reminder_runs", "member_notifications", "push_keys", "push_subscriptions"],
        "Journal": [
            "journal_entries", "journal_audio", "journal_audio_chunks", "episodes", "journal_shares", "journal_share_openings",
            "member_settings", "member_profiles",
        ],
        "AttestSchema": ["schema_migrations"],
    ]

    /// Where a module names another's table, and why.
    static let exceptions: [String: Set<String>] = [
        // Every module may read the campuses reference table (a campus's zone for its dates).
        "*": ["campuses"],
        // Migrations change every table; the dev seed writes test data in bulk.
        "AttestSchema": ["*"],
        "AttestCLI/Dev": ["*"],
        // A new member is audited in the statement that adds them (imports of thousands).
        "Identity": ["audit_log"],
        // Key rotation walks a campus's members for the rows each one's key seals.
        "Tenancy": ["users"],
        // A badge and the follow-ups name their member; the dashboard's lists too.
        "Surveys": ["users"],
        // Results are matched to members by email, and each member's health status is kept
        // beside them (member_health, which UserStore.health reads into a session's member).
        "Records": ["users", "member_health"],
        // Who a day's reminders go to is Surveys' to say (ReminderAudience.unattested), which
        // reads attestations and splices Identity's active members.
    ]

    static var root: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    @Test func eachModuleNamesOnlyItsOwnTablesButForReasonedExceptions() throws {
        var owner: [String: String] = [:]
        for (module, tables) in Self.owners { for table in tables { owner[table] = module } }
        let names = owner.keys.sorted { $0.count > $1.count }.joined(separator: "|")
        let pattern = try NSRegularExpression(pattern: "\\b(FROM|JOIN|INTO|UPDATE)\\s+(\(names))\\b")
        let sources = Self.root.appending(path: "Sources")
        let files = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil))
        var checked = 0
        var found: [String] = []
        for case let file as URL in files where file.pathExtension == "swift" {
            let relative = String(file.path.dropFirst(sources.path.count + 1))
            let module = String(relative.prefix { $0 != "/" })
            let place = relative.hasPrefix("AttestCLI/Dev/") ? "AttestCLI/Dev" : module
            let allowed = (Self.exceptions[place] ?? []).union(Self.exceptions["*"] ?? [])
            let code = try String(contentsOf: file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
                .filter { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("//") }.joined(separator: "\n")
            checked += 1
            for match in pattern.matches(in: code, range: NSRange(code.startIndex..., in: code)) {
                guard let range = Range(match.range(at: 2), in: code) else { continue }
                let table = String(code[range])
                if owner[table] == module || allowed.contains(table) || allowed.contains("*") { continue }
                found.append("\(relative) names \(table), which \(owner[table] ?? "?") owns")
            }
        }
        #expect(checked > 100, "the sources were not found under \(sources.path)")
        #expect(found.isEmpty, "\(Set(found).sorted().joined(separator: "\n"))")
        // Every table of the schema has one owner here.
        let schema = try String(contentsOf: Self.root.appending(path: "schema.sql"), encoding: .utf8)
        let created = try NSRegularExpression(pattern: "CREATE TABLE IF NOT EXISTS ([a-z_]+)")
        let tables = created.matches(in: schema, range: NSRange(schema.startIndex..., in: schema)).compactMap {
            Range($0.range(at: 1), in: schema).map { String(schema[$0]) }
        }
        #expect(tables.count > 20)
        #expect(Set(tables) == Set(owner.keys), "tables without an owner here: \(Set(tables).subtracting(owner.keys).sorted())")
    }
}
