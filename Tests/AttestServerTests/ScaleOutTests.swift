import AttestTestSupport
import Foundation
import Testing

/// deploy/ and scale-out with real engines on loopback (`Tests/ScaleOut/`): the deploy files
/// checked by the tools that read them, then a streaming standby promoted under load, two
/// servers behind nginx, and a Patroni failover, each counting every acknowledged attestation
/// against the table afterwards. The scripts print their figures; the README's "Scaling out"
/// section shows the latest. One at a time: each starts its own clusters and servers.
@Suite("deploy/ and scale-out", .serialized)
struct ScaleOutTests {
    static let scripts = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appending(path: "ScaleOut")

    static func run(_ script: String, _ arguments: [String] = [], timeout: Duration) async throws -> (status: Int32, output: String) {
        let environment: [String: String?] = [
            "ATTEST_BINARY": ChildProcess.attestBinary,
            "ATTEST_PG_BIN": ProcessInfo.processInfo.environment["ATTEST_PG_BIN"] ?? "/usr/lib/postgresql/15/bin",
        ]
        let result = try await ChildProcess.run(
            ["/usr/bin/env", "python3", "-u", scripts.appending(path: script).path] + arguments, environment: environment, timeout: timeout)
        return (result.status, result.stdout + result.stderr)
    }

    /// systemd-analyze, nginx -t, kubernetes-validate, Patroni's validator, the compose file.
    @Test func theDeployFilesPassTheToolsThatReadThem() async throws {
        let (status, output) = try await Self.run("check_deploy.py", timeout: .seconds(300))
        print(output)
        #expect(status == 0, "\(output)")
        for check in [
            "systemd unit", "nginx.conf", "kubernetes", "compose.yaml", "patroni.yml", "Containerfile", "the options deploy/ uses exist",
            "citus/compose.yaml",
        ] {
            #expect(output.contains("ok \(check)"), "no \"ok \(check)\" in \(output)")
        }
    }

    /// Issue 33's faults that need processes, a disk or a network of their own
    /// (`Tests/ScaleOut/faults.py`): the server killed mid-batch, PostgreSQL's disk full, the
    /// network to PostgreSQL cut. Each checks the table against every acknowledged attestation
    /// and the rollups against a recount. A machine that cannot mount a tmpfs or make a network
    /// namespace says NOT RUN for that fault: the test is cancelled (shown as skipped) there,
    /// and fails under CI (`CI=true`), where every fault must run.
    @Test(arguments: ["serve-killed", "disk-full", "network-cut"])
    func faultsLoseNothing(_ fault: String) async throws {
        try await Self.expectFaultLosesNothing(fault)
    }

    /// The fourth of issue 33's faults: the webhook receiver down for 2 minutes, then slow
    /// (5 s answers) for 30 s, then back; every event delivered once, none dead-lettered. Its
    /// four minutes are mostly waiting, so `scripts/test` runs it apart from the rest of this
    /// suite, while Schemathesis runs.
    @Test func aWebhookReceiverDownThenSlowGetsEachEventOnce() async throws {
        try await Self.expectFaultLosesNothing("webhook")
    }

    static func expectFaultLosesNothing(_ fault: String) async throws {
        let (status, output) = try await run("faults.py", [fault], timeout: .seconds(900))
        print(output.split(separator: "\n").filter { !$0.hasPrefix("20") }.joined(separator: "\n"))
        #expect(status == 0, "\(output.suffix(6000))")
        if let line = output.split(separator: "\n").first(where: { $0.contains("NOT RUN \(fault):") }) {
            if ProcessInfo.processInfo.environment["CI"] == "true" {
                Issue.record("under CI every fault must run: \(line)")
                return
            }
            try Test.cancel("\(line)")
        }
        try expectNothingLost(output, fault)
        #expect(output.contains("FAULT "), "no FAULT line with the figures")
    }

    /// Issue 58's traces (`Tests/ScaleOut/traces.py`): `attest serve` exporting to a loopback
    /// OTLP/HTTP receiver that decodes with the OpenTelemetry project's own protobuf package;
    /// one submission is one trace from its route through its batch to its webhook delivery,
    /// whose receiver gets the trace's `traceparent`; no span holds a token, an email, a query
    /// or a path; without `OTEL_EXPORTER_OTLP_ENDPOINT` nothing is sent.
    @Test func aSubmissionIsOneTraceFromItsRouteToItsWebhook() async throws {
        let (status, output) = try await Self.run("traces.py", ["submission"], timeout: .seconds(300))
        print(output.split(separator: "\n").filter { !$0.hasPrefix("20") && !$0.hasPrefix("{") }.joined(separator: "\n"))
        #expect(status == 0, "\(output.suffix(6000))")
        #expect(output.contains("TRACE one submission: "), "no TRACE line for the traced submission")
        #expect(output.contains("TRACE without OTEL_EXPORTER_OTLP_ENDPOINT: no span sent"), "no TRACE line for the untraced server")
    }

    /// The RESULT line's figures: something acknowledged, all of it stored, none twice.
    static func expectNothingLost(_ output: String, _ scenario: String) throws {
        let result = try #require(output.split(separator: "\n").first { $0.hasPrefix("RESULT \(scenario) ") }, "no RESULT line")
        let open = try #require(result.firstIndex(of: "{"))
        let close = try #require(result.lastIndex(of: "}"))
        let figures = try #require(try JSONSerialization.jsonObject(with: Data(result[open...close].utf8)) as? [String: Any])
        #expect(figures["lost"] as? Int == 0)
        #expect(figures["duplicates"] as? Int == 0)
        #expect((figures["acknowledged"] as? Int ?? 0) > 0 && figures["acknowledged"] as? Int == figures["stored"] as? Int)
    }

    /// Issue 33's hostile clients against one server (`Tests/ScaleOut/hostile.py`), a
    /// member's badge reads timed meanwhile; the script checks its bounds and prints them.
    @Test func hostileClientsStarveNoMember() async throws {
        let (status, output) = try await Self.run("hostile.py", ["hostile"], timeout: .seconds(600))
        print(output.split(separator: "\n").filter { $0.hasPrefix("HOSTILE") || $0.hasPrefix("FAILED") }.joined(separator: "\n"))
        #expect(status == 0, "\(output.suffix(6000))")
        #expect(output.contains("RESULT hostile "), "no RESULT line")
    }

    @Test(arguments: ["replica", "servers", "patroni"])
    func nothingAcknowledgedIsLost(_ scenario: String) async throws {
        let (status, output) = try await Self.run("scaleout.py", [scenario], timeout: .seconds(600))
        print(output)
        #expect(status == 0, "\(output.suffix(6000))")
        try Self.expectNothingLost(output, scenario)
    }
}
