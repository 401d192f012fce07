import AttestPluginHTTP
import AttestPlugins
import ExamplePlugins
import Foundation
import Hummingbird
import Logging
import Synchronization
import Testing

/// A pretend SMS gateway on loopback: it records what it is sent and answers the statuses it
/// is told to, in order (200 once the list runs out).
final class LoopbackGateway: Sendable {
    struct Received: Sendable {
        var authorization: String?
        var idempotencyKey: String?
        var message: [String: String]
    }
    private let state = Mutex<(received: [Received], statuses: [Int])>(([], []))
    private let server = Mutex<Task<Void, any Error>?>(nil)

    var received: [Received] { state.withLock { $0.received } }
    func answer(_ statuses: Int...) { state.withLock { $0.statuses = statuses } }

    /// Starts the gateway and returns its port.
    func start() async throws -> Int {
        let router = Router()
        router.post("/v1/messages") { request, context -> Response in
            let body = try await request.body.collect(upTo: 1 << 16)
            let message = try JSONDecoder().decode([String: String].self, from: Data(buffer: body))
            let status = self.state.withLock { state in
                state.received.append(
                    Received(authorization: request.headers[.authorization], idempotencyKey: request.headers.first { $0.name.canonicalName == "idempotency-key" }?.value,
                        message: message))
                return state.statuses.isEmpty ? 200 : state.statuses.removeFirst()
            }
            return Response(status: .init(code: status))
        }
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        var logger = Logger(label: "gateway")
        logger.logLevel = .critical
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { continuation.yield($0.localAddress?.port ?? 0) }, logger: logger)
        server.withLock { $0 = Task { try await app.runService(gracefulShutdownSignals: []) } }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next(), port > 0 else { throw CancellationError() }
        return port
    }

    func stop() { server.withLock { $0?.cancel() } }
}

@Suite struct SMSGatewaySinkTests {
    // The gateway of these tests runs on loopback, which the platform reaches only when allowed.
    let context = PluginContext(
        http: AsyncPluginHTTPClient(policy: .init(allowedHosts: ["127.0.0.1"])), logger: Logger(label: "sms-test"))
    let red = AttestNotification(
        event: .badgeRed, campus: "north", occurredAt: Date(), userId: UserID(UUID()), attestationId: UUID(),
        date: LocalDate(year: 2026, month: 11, day: 21), color: .red, onTime: true,
        links: ["followUps": "/v1/campuses/north/admin/follow-ups?date=2026-11-21&color=red"])

    func sink(port: Int, extra: [String: JSONValue] = [:]) throws -> SMSGatewaySink {
        var settings: [String: JSONValue] = [
            "url": .string("http://127.0.0.1:\(port)/v1/messages"), "apiKey": .string("key-123"),
            "to": .string("+15551234567"), "events": .array([.string("badge.red")]),
        ]
        settings.merge(extra) { $1 }
        return try SMSGatewaySink(settings: .object(settings))
    }

    @Test func aRedBadgeBecomesOneTextWithoutWhoItIs() async throws {
        let gateway = LoopbackGateway()
        let port = try await gateway.start()
        defer { gateway.stop() }
        let sink = try sink(port: port, extra: ["baseURL": .string("https://attest.example.edu/")])
        let result = await sink.deliver(red, payload: Data(), context: context)
        #expect(result == .delivered)
        let received = try #require(gateway.received.first)
        #expect(gateway.received.count == 1)
        #expect(received.authorization == "Bearer key-123")
        #expect(received.idempotencyKey == red.id)
        #expect(received.message["to"] == "+15551234567")
        #expect(received.message["reference"] == red.id)
        let text = try #require(received.message["text"])
        #expect(text.hasPrefix("Campus Attest north: a red badge on 2026-11-21."))
        #expect(text.hasSuffix("Follow up: https://attest.example.edu/v1/campuses/north/admin/follow-ups?date=2026-11-21&color=red"))
        #expect(!text.contains(red.userId!))
    }

    @Test func gatewayAnswersMapToRetryOrReject() async throws {
        let gateway = LoopbackGateway()
        let port = try await gateway.start()
        defer { gateway.stop() }
        let sink = try sink(port: port)
        gateway.answer(503, 429, 401, 400)
        guard case .retry = await sink.deliver(red, payload: Data(), context: context) else { Issue.record("503 not retried"); return }
        guard case .retry = await sink.deliver(red, payload: Data(), context: context) else { Issue.record("429 not retried"); return }
        guard case .reject(let why) = await sink.deliver(red, payload: Data(), context: context) else { Issue.record("401 not rejected"); return }
        #expect(why.contains("apiKey"))
        guard case .reject = await sink.deliver(red, payload: Data(), context: context) else { Issue.record("400 not rejected"); return }
        #expect(await sink.deliver(red, payload: Data(), context: context) == .delivered)
        // Every attempt carried the same event id for the gateway to drop repeats.
        #expect(Set(gateway.received.map(\.idempotencyKey)) == [red.id])
        #expect(gateway.received.count == 5)
    }

    @Test func aGatewayThatIsDownIsRetried() async throws {
        let gateway = LoopbackGateway()
        let port = try await gateway.start()
        gateway.stop()
        try await Task.sleep(for: .milliseconds(200))
        let sink = try sink(port: port, extra: ["timeoutSeconds": .number(1)])
        guard case .retry = await sink.deliver(red, payload: Data(), context: context) else {
            Issue.record("a refused connection was not retried")
            return
        }
    }

    @Test func settingsAreCheckedWithTheFix() throws {
        func refusal(_ change: [String: JSONValue]) -> String? {
            var settings: [String: JSONValue] = [
                "url": .string("https://sms.example.edu/v1/messages"), "apiKey": .string("k"), "to": .string("+15551234567"),
                "events": .array([.string("badge.red")]),
            ]
            settings.merge(change) { $1 }
            do {
                _ = try SMSGatewaySink(settings: .object(settings))
                return nil
            } catch { return "\(error)" }
        }
        #expect(refusal([:]) == nil)
        #expect(refusal(["url": .string("http://sms.example.edu/send")])?.contains("https") == true)
        #expect(refusal(["apiKey": .string("")])?.contains("apiKey is required") == true)
        #expect(refusal(["to": .string("555-1234")])?.contains("international form") == true)
        #expect(refusal(["to": .string("+0123456789")]) != nil)
        #expect(refusal(["events": .array([.string("reminder.due")])])?.contains("badge.red") == true)
        #expect(refusal(["events": .null]) != nil)
        #expect(refusal(["baseURL": .string("attest.example.edu")])?.contains("baseURL") == true)
        #expect(refusal(["timeoutSeconds": .number(0)])?.contains("timeoutSeconds") == true)
    }

    @Test func theRegistryChecksEventNamesBeforeTheSinkDoes() throws {
        var registry = PluginRegistry()
        registry.registerExamplePlugins()
        #expect(throws: PluginSettingsError.self) {
            try registry.makeSink(
                id: "sms-gateway",
                settings: .object([
                    "url": .string("https://sms.example.edu/v1/messages"), "apiKey": .string("k"), "to": .string("+15551234567"),
                    "events": .array([.string("badge.purple")]),
                ]))
        }
    }
}
