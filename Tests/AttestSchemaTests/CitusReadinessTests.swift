import AttestPostgres
import AttestSchema
import AttestTestSupport
import Foundation
import Testing

/// The schema stays distributable by `campus_id` under Citus, by Citus's documented rules,
/// read from the catalog of a migrated database (Citus itself has no package on this
/// machine): no triggers on tenant tables, no identity or sequence columns there, every
/// primary key, unique constraint and foreign key between tenant tables includes
/// `campus_id`, policies without subqueries, functions with a fixed search_path.
/// `campuses` and `schema_migrations` are the shared (reference) tables.
@Suite("Citus readiness")
struct CitusReadinessTests {
    static let shared: Set<String> = ["campuses", "schema_migrations", "community_regions", "community_days", "shc_directory"]

    @Test func theSchemaFollowsCitussRulesForDistributedTables() async throws {
        let name = try await TestDatabase.create()
        let owner = TestDatabase.client(database: name, role: nil)
        defer { Task { await owner.shutdown() } }
        let tables: [String] = try await owner.query(
            "SELECT relname FROM pg_class WHERE relnamespace = 'public'::regnamespace AND relkind IN ('r', 'p') ORDER BY relname"
        ).map { try $0.decode("relname") }
        let tenant = Set(tables).subtracting(Self.shared)
        #expect(tenant.count >= 19, "\(tenant.sorted())")

        // Every tenant table has campus_id.
        let withCampus: Set<String> = Set(
            try await owner.query(
                """
                SELECT c.relname FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid
                WHERE c.relnamespace = 'public'::regnamespace AND a.attname = 'campus_id' AND NOT a.attisdropped
                """
            ).map { try $0.decode("relname") })
        #expect(tenant.subtracting(withCampus).isEmpty, "tenant tables without campus_id: \(tenant.subtracting(withCampus).sorted())")

        // No user triggers anywhere (Citus refuses them on distributed tables).
        let triggers: [String] = try await owner.query(
            "SELECT tgrelid::regclass::text || '.' || tgname AS t FROM pg_trigger WHERE NOT tgisinternal ORDER BY 1"
        ).map { try $0.decode("t") }
        #expect(triggers.isEmpty, "triggers: \(triggers)")

        // No identity columns and no sequence defaults on tenant tables.
        let generated: [String] = try await owner.query(
            """
            SELECT c.relname || '.' || a.attname AS col FROM pg_attribute a
            JOIN pg_class c ON c.oid = a.attrelid AND c.relnamespace = 'public'::regnamespace AND c.relkind = 'r'
            LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
            WHERE a.attnum > 0 AND NOT a.attisdropped
              AND (a.attidentity <> '' OR pg_get_expr(d.adbin, d.adrelid) LIKE 'nextval(%')
            """
        ).map { try $0.decode("col") }
        #expect(generated.filter { tenant.contains(String($0.prefix { $0 != "." })) }.isEmpty, "identity or serial columns: \(generated)")

        // Keys and foreign keys: campus_id in every primary key and unique constraint of a
        // tenant table, and on both sides of a foreign key between tenant tables (a foreign key
        // to campuses, the reference table, is allowed).
        let constraints = try await owner.query(
            """
            SELECT con.conrelid::regclass::text AS tbl, con.conname, con.contype::text AS kind,
                   coalesce(con.confrelid::regclass::text, '') AS target,
                   (SELECT array_agg(attname::text) FROM pg_attribute WHERE attrelid = con.conrelid AND attnum = ANY(con.conkey)) AS cols,
                   coalesce((SELECT array_agg(attname::text) FROM pg_attribute WHERE attrelid = con.confrelid AND attnum = ANY(con.confkey)), '{}') AS target_cols
            FROM pg_constraint con WHERE con.connamespace = 'public'::regnamespace AND con.contype IN ('p', 'u', 'f', 'x')
            """)
        var checked = 0
        for row in constraints {
            let table: String = try row.decode("tbl"), name: String = try row.decode("conname"), kind: String = try row.decode("kind")
            let columns: [String] = try row.decode("cols"), target: String = try row.decode("target")
            let targetColumns: [String] = try row.decode("target_cols")
            guard tenant.contains(table) else { continue }
            checked += 1
            switch kind {
            case "f" where target == "campuses":
                #expect(columns == ["campus_id"] && targetColumns == ["id"], "\(name): \(columns) → campuses\(targetColumns)")
            case "f":
                #expect(tenant.contains(target), "\(name) points at \(target), which is neither a tenant table nor campuses")
                #expect(
                    columns.contains("campus_id") && targetColumns.contains("campus_id"), "\(name): \(columns) → \(target)\(targetColumns)")
            default:
                #expect(columns.contains("campus_id"), "\(name) on \(table) (\(kind)) lacks campus_id: \(columns)")
            }
        }
        #expect(checked >= 30)

        // Policies compare campus_id with the transaction's setting: no subqueries.
        let policies: [String] = try await owner.query(
            "SELECT tablename || ': ' || coalesce(qual, '') || ' ' || coalesce(with_check, '') AS p FROM pg_policies"
        ).map { try $0.decode("p") }
        // One a tenant table and campuses's own, and the member-only walls of the journal, episodes,
        // places and profiles, and journal_shares' own for DELETE, and the owner's reads of four tables.
        #expect(policies.count == tenant.count + 1 + 8 + 1 + 4)
        for policy in policies {
            #expect(!policy.localizedCaseInsensitiveContains("select"), "a policy with a subquery: \(policy)")
        }

        // Functions run with a fixed search_path, so they resolve the same on every node.
        let functions: [String] = try await owner.query(
            """
            SELECT proname || ' ' || coalesce(array_to_string(proconfig, ','), '') AS f
            FROM pg_proc WHERE pronamespace = 'public'::regnamespace
            """
        ).map { try $0.decode("f") }
        #expect(!functions.isEmpty)
        for function in functions {
            #expect(function.contains("search_path="), "a function without a fixed search_path: \(function)")
        }
    }

    /// `CitusLayout` names every table once, shared tables as reference tables, and distributes
    /// each tenant table after the tables its foreign keys point at; deploy/citus/distribute.sql
    /// is its script, and `attest citus distribute` refuses a database without Citus.
    @Test func theDistributionScriptCoversEveryTableInForeignKeyOrder() async throws {
        let name = try await TestDatabase.create()
        let owner = TestDatabase.client(database: name, role: nil)
        defer { Task { await owner.shutdown() } }
        let tables: Set<String> = Set(
            try await owner.query("SELECT relname FROM pg_class WHERE relnamespace = 'public'::regnamespace AND relkind = 'r'")
                .map { try $0.decode("relname") })
        #expect(Set(CitusLayout.referenceTables) == Self.shared)
        #expect(Set(CitusLayout.distributedTables) == tables.subtracting(Self.shared))
        #expect(CitusLayout.distributedTables.count == Set(CitusLayout.distributedTables).count)
        let references = try await owner.query(
            """
            SELECT conrelid::regclass::text AS source, confrelid::regclass::text AS target FROM pg_constraint
            WHERE contype = 'f' AND connamespace = 'public'::regnamespace
            """)
        let laidOut = CitusLayout.referenceTables + CitusLayout.distributedTables
        let order = Dictionary(laidOut.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
        #expect(references.count >= 20)
        for row in references {
            let source: String = try row.decode("source"), target: String = try row.decode("target")
            #expect((order[target] ?? .max) < (order[source] ?? .min), "\(source) → \(target) is laid out before its target")
        }

        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appending(path: "deploy/citus/distribute.sql")
        #expect(
            try String(contentsOf: file, encoding: .utf8) == CitusLayout.script,
            "regenerate it: attest citus script > deploy/citus/distribute.sql")

        await #expect(throws: CitusLayout.Refusal.self) { _ = try await CitusLayout.distribute(owner) }
        let refused = try await ChildProcess.run(
            [ChildProcess.attestBinary, "citus", "distribute"], environment: ["DATABASE_URL": TestDatabase.url(database: name)])
        #expect(refused.status == 1)
        #expect(
            refused.stderr.contains("cannot distribute: this database has no citus extension: connect to a Citus coordinator"),
            "\(refused.stderr)")
    }
}
