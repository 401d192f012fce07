import AttestPlugins
import AttestPluginsTesting
import AttestTestSupport
import Foundation
import Hummingbird
import Synchronization
import Testing

@testable import AttestPluginHTTP

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

    @Test func theGateGivesTurnsInOrderAndNoneAfterItsTimeoutOrCancellation() async throws {
        let gate = HostGate(limit: 1)
        #expect(await gate.enter(within: .seconds(1)))
        let clock = ContinuousClock(), start = clock.now
        #expect(await gate.enter(within: .milliseconds(200)) == false)
        #expect(clock.now - start >= .milliseconds(150))
        let cancelled = Task { await gate.enter(within: .seconds(30)) }
        try await Task.sleep(for: .milliseconds(100))
        cancelled.cancel()
        #expect(await cancelled.value == false)
        // Two waiting: the first to come is the first given a turn.
        let order = Turns()
        let first = Task {
            guard await gate.enter(within: .seconds(30)) else { return }
            order.taken.withLock { $0.append(1) }
            gate.leave()
        }
        while gate.waiting < 1 { try await Task.sleep(for: .milliseconds(10)) }
        let second = Task {
            guard await gate.enter(within: .seconds(30)) else { return }
            order.taken.withLock { $0.append(2) }
            gate.leave()
        }
        while gate.waiting < 2 { try await Task.sleep(for: .milliseconds(10)) }
        gate.leave()
        _ = await (first.value, second.value)
        #expect(order.taken.withLock { $0 } == [1, 2])
        // Every turn given back: the one turn is free again.
        #expect(await gate.enter(within: .milliseconds(100)))
        gate.leave()
    }

    /// A gate for each scheme and port of a host, as async-http-client keeps a pool for each;
    /// past the limit, idle gates are let go and one in use is kept.
    @Test func eachPortOfAHostHasAGateOfItsOwn() async throws {
        let gates = PortGates()
        let one = gates.gate(for: URL(string: "http://hooks.example.edu:8080/a")!)
        #expect(gates.gate(for: URL(string: "http://hooks.example.edu:8080/b")!) === one)
        #expect(gates.gate(for: URL(string: "http://hooks.example.edu:8081/a")!) !== one)
        #expect(
            gates.gate(for: URL(string: "http://hooks.example.edu/a")!) === gates.gate(for: URL(string: "http://hooks.example.edu:80/")!))
        #expect(
            gates.gate(for: URL(string: "https://hooks.example.edu/a")!) === gates.gate(for: URL(string: "https://hooks.example.edu:443/")!)
        )
        #expect(gates.gate(for: URL(string: "https://hooks.example.edu/a")!) !== gates.gate(for: URL(string: "http://hooks.example.edu/")!))
        #expect(gates.count == 4)
        #expect(await one.enter(within: .seconds(1)))
        for port in 1...PortGates.limit { _ = gates.gate(for: URL(string: "http://hooks.example.edu:\(port)/")!) }
        #expect(gates.count <= PortGates.limit)
        #expect(gates.gate(for: URL(string: "http://hooks.example.edu:8080/")!) === one, "a gate in use was let go")
        one.leave()
        #expect(one.isIdle)
    }
}

/// The outbound client's deadlines against a receiver down, then slow. These time an
/// in-process receiver, which answers on Swift's cooperative pool: `scripts/test` runs them
/// on their own, as it does `SlowClientTests` (with the rest of the suite, 25 of 32 answers
/// of 2 s came after 3 s once).
@Suite("Outbound HTTP deadlines")
struct OutboundDeadlineTests {
    /// A receiver that refuses connections fails each request at once, and once it answers,
    /// requests past the host's 32 connections wait their turn before their deadline starts.
    /// Retrying connections under a request's deadline, the client held deliveries to a
    /// receiver that was down for their whole timeout; queued for a connection under it,
    /// deliveries to a slow receiver were sent late, answered, timed out anyway and were
    /// delivered twice (`faults.py webhook` in CI).
    @Test func aReceiverDownFailsAtOnceAndRequestsQueuedForAConnectionKeepTheirDeadline() async throws {
        let port = try LoopbackHTTP.freePort()
        let url = URL(string: "http://127.0.0.1:\(port)/events")!
        let clock = ContinuousClock()
        /// `count` requests at once: each one's status, or its error.
        func send(_ count: Int, timeout: Duration) async -> [String] {
            await withTaskGroup(of: String.self) { group in
                for _ in 0..<count {
                    group.addTask {
                        do {
                            let request = PluginHTTPRequest(method: "POST", url: url, body: Data("{}".utf8), timeout: timeout)
                            return "\(try await LoopbackServer.http.send(request).status)"
                        } catch {
                            return "\(error)"
                        }
                    }
                }
                return await group.reduce(into: [String]()) { $0.append($1) }
            }
        }
        // Down: 40 at once, more than the host's 32 connections, each refused at once.
        let started = clock.now
        let refused = await send(40, timeout: .seconds(5))
        let failing = clock.now - started
        #expect(
            refused.count == 40 && refused.allSatisfy { $0 == "connection failed: 127.0.0.1:\(port): Connection refused" },
            "\(Set(refused))")
        #expect(failing < .seconds(3), "40 refused connections took \(failing)")
        // Back, answering after 5 s: 40 at once with an 8 s deadline. 32 are answered at about
        // 5 s, the other 8 sent then and answered at about 10 s, within their own 8 s (queued
        // under their deadline, they timed out at 8 s, answered by the receiver).
        let receiver = try await LoopbackServer.start(port: port, fallback: .init(status: 204, delay: .seconds(5)))
        defer { Task { await receiver.stop() } }
        let answers = await send(40, timeout: .seconds(8))
        #expect(answers == Array(repeating: "204", count: 40), "\(answers.filter { $0 != "204" })")
        #expect(receiver.requests.count == 40)
    }

    /// The turns are a port's, not a host's: a receiver that holds all 32 of its connections
    /// with slow answers keeps no one waiting at another port of the same host. With one gate
    /// a host, the request to the quick receiver waited about 4 s for a turn (and in the test
    /// suite, where every receiver is on 127.0.0.1, one test's slow receiver held up others).
    @Test func aSlowReceiverHoldsUpNoOtherPortOfItsHost() async throws {
        let slow = try await LoopbackServer.start(fallback: .init(status: 204, delay: .seconds(4)))
        let quick = try await LoopbackServer.start(fallback: .init(status: 204))
        defer {
            Task {
                await slow.stop()
                await quick.stop()
            }
        }
        let held = Task {
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<PinnedClients.connections {
                    group.addTask {
                        let request = PluginHTTPRequest(
                            method: "POST", url: slow.url("/events"), body: Data("{}".utf8), timeout: .seconds(8))
                        _ = try? await LoopbackServer.http.send(request)
                    }
                }
            }
        }
        let clock = ContinuousClock(), started = clock.now
        while slow.requests.count < PinnedClients.connections, clock.now - started < .seconds(3) {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(slow.requests.count == PinnedClients.connections)
        let asked = clock.now
        let answer = try await LoopbackServer.http.send(
            PluginHTTPRequest(method: "POST", url: quick.url("/events"), body: Data("{}".utf8), timeout: .seconds(8)))
        let waited = clock.now - asked
        #expect(answer.status == 204)
        #expect(waited < .seconds(2), "the quick receiver answered after \(waited)")
        await held.value
    }
}

/// Who had a turn, in order.
private final class Turns: Sendable {
    let taken = Mutex<[Int]>([])
}
