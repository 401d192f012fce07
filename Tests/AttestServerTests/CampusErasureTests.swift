import AttestPlugins
import AttestPostgres
import AttestTestSupport
import Foundation
import Identity
import Records
import Surveys
import Tenancy
import Testing

@Suite("Campus erasure")
struct CampusErasureTests {
    /// `attest campus erase`: every row of every table that names the campus goes (members'
    /// journals, recordings, exemptions, subscriptions, keys, settings, the audit log, a test
    /// result that matched nobody), another campus keeps all of its, and the slug is free again.
    @Test func aCampusErasedLeavesNoRowAnywhereAndTheOthersKeepTheirs() async throws {
        let server = try await TestServer.make()
        let sealed = try await KeyRotationTests.sealEveryKind(server, kek: TestServer.kek)
        let north = sealed.campus, south = try await server.campus("south")
        _ = try await server.user("s@example.edu", at: south)
        // Answers go through the server's batched writer, which runs with the server (and the
        // pool closes when it stops).
        try await server.run { _ in
            for campus in [north, south] {
                let questionnaire = try await QuestionnaireStore(client: server.pool).publish(
                    campus: campus, draft: AttestationTests.draft, actor: "test")
                let (member, _) = try await server.user("answers@example.edu", at: campus)
                _ = try await server.services.attestations.submit(
                    campus: campus, user: member.id, surveyVersion: questionnaire.version,
                    answers: ["fever": .bool(false), "cough": .bool(false)], idempotencyKey: nil, at: Date())
                // A result nobody matched: it refers to no member who would take it along.
                let unmatched = LabResult(
                    specimenID: "S-\(campus.slug)", subject: "nobody@example.edu", testCode: "94500-6", detected: true,
                    collectedAt: Date().addingTimeInterval(-86_400), resultedAt: Date())
                _ = try await HealthRecords(client: server.pool).receive(
                    campus: campus, results: [unmatched], source: "test", actor: "test")
            }
        }
        let owner = TestDatabase.client(database: server.database, role: nil, maxConnections: 1)
        // Every table with a campus_id, and how many of its rows name each campus.
        func rows(of campus: CampusID) async throws -> [String: Int] {
            let tables = try await owner.query(
                """
                SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'campus_id' AND NOT a.attisdropped
                WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition ORDER BY 1
                """
            ).map { try $0.decode("relname", as: String.self) }
            var counts: [String: Int] = [:]
            for table in tables {
                let found = try await owner.query("SELECT count(*)::int AS n FROM \(identifier: table) WHERE campus_id = \(campus)")
                counts[table] = try found[0].decode("n")
            }
            return counts
        }
        let before = try await rows(of: north.id), southBefore = try await rows(of: south.id)
        for table in ["users", "attestations", "journal_audio_chunks", "exemptions", "push_subscriptions", "audit_log", "test_results"] {
            #expect((before[table] ?? 0) > 0, "north has \(table) rows to erase")
        }

        let cli = AdminCLITests.CLI(database: server.database)
        let asked = try await cli.run("campus", "erase", "north")
        AdminCLITests.expectFailure(asked, "erasing north deletes its 3 members and every row of theirs")
        #expect(try await rows(of: north.id) == before, "nothing erased without --yes")
        let erased = try await cli.run("campus", "erase", "north", "--yes", "--log-format", "json")
        #expect(erased.status == 0, "\(erased.stderr)")
        #expect(erased.stdout.contains("Erased campus north (\(north.id)): 3 members and every row of theirs, 1 test result"))
        #expect(erased.stderr.contains(#""message":"campus erased""#) && erased.stderr.contains(#""members":"3""#), "\(erased.stderr)")

        let after = try await rows(of: north.id)
        #expect(after.values.allSatisfy { $0 == 0 }, "\(after.filter { $0.value > 0 })")
        #expect(try await rows(of: south.id) == southBefore)
        AdminCLITests.expectFailure(try await cli.run("campus", "erase", "north", "--yes"), "no campus with slug \"north\"")
        #expect(try await cli.run("campus", "create", "north", "--name", "North again", "--timezone", "UTC").status == 0)
        await owner.shutdown()
    }
}
