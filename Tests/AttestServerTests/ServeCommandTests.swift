import AttestPostgres
import AttestTestSupport
import Foundation
import Testing

@Suite("attest serve, end to end")
struct ServeCommandTests {
    /// The server logs in as a member of attest_app that owns nothing: as the schema's owner
    /// (a superuser here) it refuses to start, and before the schema exists it says to migrate.
    @Test func refusesToServeAsTheOwnerOrBeforeTheSchemaExists() async throws {
        let name = try await TestDatabase.create(migrated: false)
        let asOwner = try await ChildProcess.run(
            [ChildProcess.attestBinary, "serve", "--port", "0"], environment: ["DATABASE_URL": TestDatabase.url(database: name)])
        #expect(asOwner.status == 1)
        #expect(asOwner.stderr.contains("cannot serve: the server logs in as postgres, a superuser"), "\(asOwner.stderr)")
        #expect(asOwner.stderr.contains("GRANT attest_app TO attest_server"))
        let early = try await ChildProcess.run(
            [ChildProcess.attestBinary, "serve", "--port", "0"],
            environment: ["DATABASE_URL": try await TestDatabase.serverURL(database: name)])
        #expect(early.status == 1)
        #expect(early.stderr.contains("no Campus Attest schema yet: run `attest migrate` as the owner first"), "\(early.stderr)")
        // A role that owns a table of the schema is refused too, superuser or not.
        let migrated = try await TestDatabase.create()
        let owner = TestDatabase.client(database: migrated, role: nil)
        try await owner.query("ALTER TABLE testing_locations OWNER TO \(identifier: TestDatabase.serverRole)")
        await owner.shutdown()
        let owning = try await ChildProcess.run(
            [ChildProcess.attestBinary, "serve", "--port", "0"],
            environment: ["DATABASE_URL": try await TestDatabase.serverURL(database: migrated)])
        #expect(owning.status == 1)
        #expect(owning.stderr.contains("which owns 1 of the schema's tables and functions"), "\(owning.stderr)")
        // So is a member of the owner's role, which owns nothing itself but may act as the owner.
        let admin = try TestDatabase.adminClient()
        let member = "attest_owner_member_\(UUID().uuidString.prefix(8).lowercased())"
        let schemaOwner: String = try await admin.query("SELECT current_user::text AS me")[0].decode("me")
        try await admin.query("CREATE ROLE \(identifier: member) LOGIN IN ROLE attest_app")
        try await admin.query("GRANT \(identifier: schemaOwner) TO \(identifier: member)")
        let memberOfOwner = try await ChildProcess.run(
            [ChildProcess.attestBinary, "serve", "--port", "0"],
            environment: ["DATABASE_URL": TestDatabase.url(database: migrated) + " user=\(member)"])
        try await admin.query("DROP ROLE \(identifier: member)")
        await admin.shutdown()
        #expect(memberOfOwner.status == 1)
        #expect(memberOfOwner.stderr.contains("is a member of \(schemaOwner), the schema's owner"), "\(memberOfOwner.stderr)")
        // A standby URL libpq cannot parse stops serve before it connects anywhere.
        let badStandby = try await ChildProcess.run(
            [ChildProcess.attestBinary, "serve", "--port", "0"],
            environment: ["DATABASE_URL": try await TestDatabase.serverURL(database: migrated), "DATABASE_READ_URL": "host=standby bogus"])
        // So do trace settings this build cannot follow: it exports over OTLP/HTTP only.
        let grpc = try await ChildProcess.run(
            [ChildProcess.attestBinary, "serve", "--port", "0"],
            environment: [
                "DATABASE_URL": try await TestDatabase.serverURL(database: migrated),
                "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
            ])
        #expect(grpc.status == 1)
        #expect(
            grpc.stderr.contains("OTEL_EXPORTER_OTLP_PROTOCOL is grpc: attest exports traces over OTLP/HTTP only; set it to http/protobuf"),
            "\(grpc.stderr)")
        #expect(badStandby.status == 1)
        #expect(
            badStandby.stderr.contains(
                "cannot serve: --database-read-url (or DATABASE_READ_URL): the database URL is not a valid libpq URI"),
            "\(badStandby.stderr)")
    }

    @Test func servesOnLoopbackMigratesFirstAndStopsGracefullyOnSIGTERM() async throws {
        let name = try await TestDatabase.create(migrated: false)
        let port = try LoopbackHTTP.freePort()
        let ownerFile = FileManager.default.temporaryDirectory.appending(path: "attest-owner-\(UUID().uuidString.prefix(8))").path
        try Data((TestDatabase.url(database: name) + "\n").utf8).write(to: URL(fileURLWithPath: ownerFile))
        defer { try? FileManager.default.removeItem(atPath: ownerFile) }
        let serverURL = try await TestDatabase.serverURL(database: name)
        let server = try ChildProcess(
            [ChildProcess.attestBinary, "serve", "--port", "\(port)", "--write-workers", "2", "--migrate-url", "@" + ownerFile],
            environment: ["DATABASE_URL": serverURL])
        // 90 s: the whole schema is made first, and in CI's busiest minute that and the start
        // took more than 30 s twice.
        try await LoopbackHTTP.waitFor(port: port, path: "/healthz", timeout: .seconds(90), while: server)
        let ready = try await LoopbackHTTP.request(port: port, path: "/readyz")
        #expect(ready.status == 200)
        #expect(ready.body == #"{"status":"ready"}"#)
        let missing = try await LoopbackHTTP.request(port: port, path: "/nowhere")
        #expect(missing.status == 404)
        #expect(missing.headers["content-type"] == "application/problem+json")

        // The schema is there: serve migrated the empty database (as the owner) before listening.
        let owner = TestDatabase.client(database: name, role: nil)
        let versions = try await owner.query("SELECT count(*) AS n FROM schema_migrations")
        #expect(try versions[0].decode("n", as: Int.self) >= 1)
        await owner.shutdown()

        // A second server on the same port stops at once with one error that says what to do,
        // and no warnings from the services it had started (they were only cancelled).
        let second = try ChildProcess([ChildProcess.attestBinary, "serve", "--port", "\(port)"], environment: ["DATABASE_URL": serverURL])
        #expect(try await second.wait(timeout: .seconds(30)) != 0)
        #expect(
            second.stderr.contains("cannot listen on 127.0.0.1:\(port): the address is already in use; pass another --port"),
            "\(second.stderr)")
        let noise = second.stderr.split(separator: "\n").filter { $0.contains(#""level":"warning""#) || $0.contains(#""level":"error""#) }
        #expect(noise.isEmpty, "\(noise)")

        server.signal(SIGTERM)
        let status = try await server.wait(timeout: .seconds(15))
        #expect(status == 0)
        // Structured logs: one JSON object per line on stderr, a line per request, no query strings.
        let lines = server.stderr.split(separator: "\n")
        let requests = lines.compactMap { line -> [String: Any]? in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return nil }
            return object["message"] as? String == "request" ? object : nil
        }
        #expect(requests.contains { $0["route"] as? String == "/readyz" && $0["status"] as? String == "200" })
        #expect(lines.allSatisfy { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) != nil })
        await #expect(throws: (any Error).self) { try await LoopbackHTTP.request(port: port, path: "/healthz") }
    }
}
