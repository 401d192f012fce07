import AttestPostgres
import AttestTestSupport
import Foundation
import Testing

@Suite("attest serve, end to end")
struct ServeCommandTests {
    @Test func servesOnLoopbackMigratesFirstAndStopsGracefullyOnSIGTERM() async throws {
        let name = try await TestDatabase.create(migrated: false)
        let port = try LoopbackHTTP.freePort()
        let server = try ChildProcess(
            [ChildProcess.attestBinary, "serve", "--port", "\(port)", "--write-workers", "2"],
            environment: ["DATABASE_URL": TestDatabase.url(database: name)])
        try await LoopbackHTTP.waitFor(port: port, path: "/healthz", timeout: .seconds(30), while: server)
        let ready = try LoopbackHTTP.request(port: port, path: "/readyz")
        #expect(ready.status == 200)
        #expect(ready.body == #"{"status":"ready"}"#)
        let missing = try LoopbackHTTP.request(port: port, path: "/nowhere")
        #expect(missing.status == 404)
        #expect(missing.headers["content-type"] == "application/problem+json")

        // The schema is there: serve migrated the empty database before listening.
        let owner = TestDatabase.client(database: name, role: nil)
        let versions = try await owner.query("SELECT count(*) AS n FROM schema_migrations")
        #expect(try versions[0].decode("n", as: Int.self) >= 1)
        await owner.shutdown()

        // A second server on the same port stops at once with one error that says what to do,
        // and no warnings from the services it had started (they were only cancelled).
        let second = try ChildProcess(
            [ChildProcess.attestBinary, "serve", "--port", "\(port)"], environment: ["DATABASE_URL": TestDatabase.url(database: name)])
        #expect(try await second.wait(timeout: .seconds(30)) != 0)
        #expect(second.stderr.contains("cannot listen on 127.0.0.1:\(port): the address is already in use; pass another --port"), "\(second.stderr)")
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
        #expect(requests.contains { $0["path"] as? String == "/readyz" && $0["status"] as? String == "200" })
        #expect(lines.allSatisfy { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) != nil })
        #expect(throws: (any Error).self) { try LoopbackHTTP.request(port: port, path: "/healthz") }
    }
}
