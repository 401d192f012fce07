import AttestPlugins
import AttestPluginsTesting
import ExamplePlugins
import Foundation
import Logging
import Testing

/// A pretend SMS gateway on loopback (the test kit's `LoopbackServer`): what it was sent.
extension LoopbackServer {
    struct Message {
        var authorization: String?
        var idempotencyKey: String?
        var fields: [String: String]
    }

    var messages: [Message] {
        requests.filter { $0.path == "/v1/messages" }.map {
            Message(
                authorization: $0.header("Authorization"), idempotencyKey: $0.header("Idempotency-Key"),
                fields: (try? JSONDecoder().decode([String: String].self, from: $0.body)) ?? [:])
        }
    }
}

@Suite struct SMSGatewaySinkTests {
    // The gateway of these tests runs on loopback, which the platform reaches only when allowed.
    let context = PluginContext(http: LoopbackServer.http, logger: Logger(label: "sms-test"))
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
        let gateway = try await LoopbackServer.start()
        let sink = try sink(port: gateway.port, extra: ["baseURL": .string("https://attest.example.edu/")])
        let result = await sink.deliver(red, payload: Data(), context: context)
        #expect(result == .delivered)
        let received = try #require(gateway.messages.first)
        #expect(gateway.messages.count == 1)
        #expect(received.authorization == "Bearer key-123")
        #expect(received.idempotencyKey == red.id)
        #expect(received.fields["to"] == "+15551234567")
        #expect(received.fields["reference"] == red.id)
        let text = try #require(received.fields["text"])
        #expect(text.hasPrefix("Campus Attest north: a red badge on 2026-11-21."))
        #expect(text.hasSuffix("Follow up: https://attest.example.edu/v1/campuses/north/admin/follow-ups?date=2026-11-21&color=red"))
        #expect(!text.contains(red.userId ?? "no user"))
        await gateway.stop()
    }

    @Test func gatewayAnswersMapToRetryOrReject() async throws {
        let gateway = try await LoopbackServer.start()
        let sink = try sink(port: gateway.port)
        gateway.answer(.init(status: 503), .init(status: 429), .init(status: 401), .init(status: 400))
        guard case .retry = await sink.deliver(red, payload: Data(), context: context) else {
            Issue.record("503 not retried")
            return
        }
        guard case .retry = await sink.deliver(red, payload: Data(), context: context) else {
            Issue.record("429 not retried")
            return
        }
        guard case .reject(let why) = await sink.deliver(red, payload: Data(), context: context) else {
            Issue.record("401 not rejected")
            return
        }
        #expect(why.contains("apiKey"))
        guard case .reject = await sink.deliver(red, payload: Data(), context: context) else {
            Issue.record("400 not rejected")
            return
        }
        #expect(await sink.deliver(red, payload: Data(), context: context) == .delivered)
        // Every attempt carried the same event id for the gateway to drop repeats.
        #expect(Set(gateway.messages.map(\.idempotencyKey)) == [red.id])
        #expect(gateway.messages.count == 5)
        await gateway.stop()
    }

    @Test func aGatewayThatIsDownIsRetried() async throws {
        let gateway = try await LoopbackServer.start()
        await gateway.stop()
        let sink = try sink(port: gateway.port, extra: ["timeoutSeconds": .number(1)])
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
