@testable import AttestPluginHTTP
import AttestPlugins
import AttestTestSupport
import Foundation
import Hummingbird
import Testing

/// The one outbound client (keys, webhooks, feeds): https to public addresses only, unless the
/// operator allows a host by name; no redirects; bounded responses.
@Suite("Outbound HTTP")
struct OutboundHTTPTests {
    @Test func addressesThePublicInternetCannotReachAreKnown() {
        let inside = [
            "127.0.0.1", "127.255.0.9", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254", "100.64.0.1",
            "0.0.0.0", "224.0.0.1", "255.255.255.255", "::1", "::", "fe80::1", "fd00::1", "fc00::2", "ff02::1", "::ffff:127.0.0.1",
            "::ffff:10.0.0.1", "64:ff9b::a9fe:a9fe", "[::1]", "2001:db8::1", "198.18.0.1", "192.0.2.1",
        ]
        for text in inside {
            let address = OutboundAddress(literal: text)
            #expect(address != nil && address?.isPublic == false, "\(text)")
        }
        for text in ["8.8.8.8", "172.32.0.1", "100.128.0.1", "1.1.1.1", "2606:4700:4700::1111", "::ffff:8.8.8.8", "169.253.0.1"] {
            #expect(OutboundAddress(literal: text)?.isPublic == true, "\(text)")
        }
        #expect(OutboundAddress(literal: "example.org") == nil)
        #expect(OutboundAddress(literal: "127.0.0.1")?.description == "127.0.0.1")
        #expect(OutboundAddress(literal: "::ffff:10.0.0.1")?.description == "::ffff:10.0.0.1")
    }

    @Test func onlyHttpsToPublicAddressesUnlessTheHostIsAllowed() async throws {
        let router = Router()
        router.get("feed") { _, _ in "[]" }
        router.get("moved") { _, _ in Response(status: .found, headers: [.location: "/feed"]) }
        router.get("big") { _, _ in String(repeating: "x", count: 5_000) }
        let (port, task) = try await startLoopbackServer(router)
        defer { task.cancel() }
        let strict = AsyncPluginHTTPClient()
        func refusal(_ client: AsyncPluginHTTPClient, _ url: String) async -> String? {
            do {
                _ = try await client.send(PluginHTTPRequest(url: URL(string: url)!, timeout: .seconds(2)))
                return nil
            } catch let PluginHTTPError.refused(reason) {
                return reason
            } catch {
                return "not refused but \(error)"
            }
        }
        #expect(await refusal(strict, "http://127.0.0.1:\(port)/feed")?.contains("is not https") == true)
        #expect(await refusal(strict, "https://127.0.0.1:\(port)/feed")?.contains("127.0.0.1 is 127.0.0.1, a loopback") == true)
        #expect(await refusal(strict, "https://localhost:\(port)/feed")?.contains("localhost is 127.0.0.1") == true)
        #expect(await refusal(strict, "https://[::1]:\(port)/feed")?.contains("a loopback, private or link-local address") == true)
        #expect(await refusal(strict, "https://169.254.169.254/latest/meta-data/")?.contains("169.254.169.254") == true)
        #expect(await refusal(strict, "ftp://example.org/x")?.contains("is not https") == true)

        let allowed = AsyncPluginHTTPClient(policy: .init(allowedHosts: ["127.0.0.1"], maxResponseBytes: 1_000))
        let feed = try await allowed.send(PluginHTTPRequest(url: URL(string: "http://127.0.0.1:\(port)/feed")!))
        #expect(feed.status == 200 && String(decoding: feed.body, as: UTF8.self) == "[]")
        #expect(feed.header("content-type") != nil)
        // A redirect is answered as it is: its target is not fetched.
        let moved = try await allowed.send(PluginHTTPRequest(url: URL(string: "http://127.0.0.1:\(port)/moved")!))
        #expect(moved.status == 302 && moved.body.isEmpty)
        await #expect(throws: PluginHTTPError.responseTooLarge) {
            try await allowed.send(PluginHTTPRequest(url: URL(string: "http://127.0.0.1:\(port)/big")!))
        }
        // Allowing one host allows no other: localhost is a name of its own.
        #expect(await refusal(allowed, "http://localhost:\(port)/feed")?.contains("is not https") == true)
    }
}
