import AttestPluginsTesting
import AttestPostgres
import AttestTestSupport
import Foundation
import HTTPTypes
import Testing

@testable import AttestAPI
@testable import AttestServer
@testable import AttestWeb

/// The value of one series in Prometheus text: `attest_submissions_total{outcome="created"}`.
/// Nil when the series is not there.
func metric(_ text: String, _ series: String) -> Double? {
    for line in text.split(separator: "\n") where line.hasPrefix(series + " ") {
        return Double(line.dropFirst(series.count + 1))
    }
    return nil
}

@Suite("Metrics")
struct MetricsTests {
    static let submit = #"route="/v1/campuses/{campus}/attestations""#

    @Test func requestsSubmissionsAndThePoolAreCountedAndNoLabelNamesACampusOrAMember() async throws {
        let clock = try TestClock("2026-11-20T14:00:00Z")
        let (server, campus) = try await AttestationTests.setUp(clock: clock, slug: "metrics-north")
        let (_, first) = try await server.user("first-member@example.edu", at: campus)
        let (_, second) = try await server.user("second-member@example.edu", at: campus)
        try await server.run { api in
            let path = "/v1/campuses/metrics-north/attestations"
            let body = AttestationTests.body(#"{"fever": true, "cough": false}"#)
            #expect(try await api.send(.post, path, template: AttestationTests.path, token: first, json: body).status == 201)
            #expect(try await api.send(.post, path, template: AttestationTests.path, token: first, json: body).status == 409)
            let keyed: HTTPFields = [HTTPField.Name("Idempotency-Key")!: "retry-1"]
            #expect(
                try await api.send(.post, path, template: AttestationTests.path, token: second, json: body, headers: keyed).status == 201)
            #expect(
                try await api.send(.post, path, template: AttestationTests.path, token: second, json: body, headers: keyed).status == 201)
            #expect(try await api.send(.post, path, template: AttestationTests.path, token: "not-a-token", json: body).status == 401)
            #expect(try await api.send(.post, path, template: AttestationTests.path, token: first, json: "{").status == 400)
            #expect(try await api.client.execute(uri: "/no/such/place-3f9a", method: .get).status == .notFound)
            for method in ["PROPFIND", "MKCOL"] {
                #expect(try await api.client.execute(uri: "/healthz", method: HTTPRequest.Method(method)!).status.code >= 400)
            }

            let reply = try await api.send(.get, "/metrics", template: "/metrics")
            #expect(reply.status == 200)
            #expect(reply.headers[.contentType] == "text/plain; version=0.0.4; charset=utf-8")
            let text = reply.body
            #expect(metric(text, #"attest_submissions_total{outcome="created"}"#) == 2)
            #expect(metric(text, #"attest_submissions_total{outcome="already_submitted"}"#) == 1)
            #expect(metric(text, #"attest_submissions_total{outcome="replayed"}"#) == 1)
            // Four submissions reached the writer, in one batch or more.
            #expect(metric(text, "attest_write_batch_size_sum") == 4)
            let batches = try #require(metric(text, "attest_write_batch_size_count"))
            #expect((1...4).contains(batches))
            #expect(metric(text, "attest_write_batch_seconds_count") == batches)
            for (status, count) in [("201", 3.0), ("409", 1), ("401", 1), ("400", 1)] {
                #expect(
                    metric(text, #"attest_http_requests_total{method="POST",\#(Self.submit),status="\#(status)"}"#) == count, "\(status)")
            }
            #expect(metric(text, #"attest_http_request_seconds_count{method="POST",\#(Self.submit)}"#) == 6)
            #expect(metric(text, #"attest_http_requests_total{method="GET",route="unmatched",status="404"}"#) == 1)
            // Both WebDAV requests, under one method label.
            let other = text.split(separator: "\n").filter { $0.hasPrefix(#"attest_http_requests_total{method="other","#) }
            let otherCount: Double = other.compactMap { line -> Double? in line.split(separator: " ").last.flatMap { Double($0) } }.reduce(
                0, +)
            #expect(otherCount == 2, "\(other)")
            #expect(try #require(metric(text, #"attest_db_connections{state="open"}"#)) >= 1)
            #expect(metric(text, #"attest_db_connections{state="waiting"}"#) == 0)
            // Bounded labels: no slug, member, token, answer or unmatched path.
            for secret in [
                "metrics-north", "first-member", "second-member", first, second, "not-a-token", "fever", "place-3f9a", "retry-1",
                "PROPFIND", "MKCOL",
            ] {
                #expect(!text.contains(secret), "\(secret)")
            }
            // The scrape itself is counted by the next one.
            let again = try await api.send(.get, "/metrics", template: "/metrics").body
            #expect(metric(again, #"attest_http_requests_total{method="GET",route="/metrics",status="200"}"#) == 1)
        }
    }

    @Test func metricsPortServesThemApartFromTheAPI() async throws {
        let name = try await TestDatabase.create()
        let serverURL = try await TestDatabase.serverURL(database: name)
        let port = try LoopbackHTTP.freePort()
        var metricsPort = try LoopbackHTTP.freePort()
        while metricsPort == port { metricsPort = try LoopbackHTTP.freePort() }
        let server = try ChildProcess(
            [ChildProcess.attestBinary, "serve", "--port", "\(port)", "--metrics-port", "\(metricsPort)"],
            environment: ["DATABASE_URL": serverURL])
        try await LoopbackHTTP.waitFor(port: port, path: "/healthz", timeout: .seconds(30), while: server)
        try await LoopbackHTTP.waitFor(port: metricsPort, path: "/metrics", timeout: .seconds(10), while: server)
        #expect(try await LoopbackHTTP.request(port: port, path: "/healthz").status == 200)
        let metrics = try await LoopbackHTTP.request(port: metricsPort, path: "/metrics")
        #expect(metrics.status == 200)
        #expect(metrics.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8")
        // The API port's requests are counted; the metrics port serves nothing else.
        #expect(metric(metrics.body, #"attest_http_requests_total{method="GET",route="/healthz",status="200"}"#) ?? 0 >= 1)
        #expect(try await LoopbackHTTP.request(port: port, path: "/metrics").status == 404)
        #expect(try await LoopbackHTTP.request(port: metricsPort, path: "/healthz").status == 404)
        server.signal(SIGTERM)
        #expect(try await server.wait(timeout: .seconds(15)) == 0)

        let same = try ChildProcess(
            [ChildProcess.attestBinary, "serve", "--port", "\(port)", "--metrics-port", "\(port)"],
            environment: ["DATABASE_URL": serverURL])
        #expect(try await same.wait(timeout: .seconds(30)) != 0)
        #expect(same.stderr.contains("--metrics-port must differ from --port"), "\(same.stderr)")
    }
}
