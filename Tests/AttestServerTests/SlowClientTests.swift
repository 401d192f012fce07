import AttestPluginsTesting
import AttestTestSupport
import Foundation
import Hummingbird
import Testing

@testable import AttestAPI
@testable import AttestServer
@testable import AttestWeb

/// A client that opens connections and sends nothing, or trickles its headers, or keeps an
/// idle connection open, holds it for the idle timeout at most.
@Suite("Slow clients")
struct SlowClientTests {
    static func connect(_ port: Int) throws -> Int32 { try LoopbackHTTP.connect(port: port, receiveTimeout: 15) }

    /// `server`'s application on a free loopback port, running until the task is cancelled.
    static func serve(_ server: TestServer, idleTimeout: Duration) async throws -> (port: Int, running: Task<Void, any Error>) {
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let app = AttestServer.buildApplication(
            configuration: ServerConfiguration(port: 0, idleTimeout: idleTimeout), services: server.services,
            logger: TestDatabase.testLogger, frontEnds: TestServer.frontEnds,
            onServerRunning: { continuation.yield($0) })
        let running = Task { try await app.runService(gracefulShutdownSignals: []) }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else {
            running.cancel()
            throw TestEnvironmentError("the server did not start")
        }
        return (port, running)
    }

    static func write(_ descriptor: Int32, _ text: String) {
        _ = Array(text.utf8).withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    struct Outcome: Sendable, CustomStringConvertible {
        var text: String
        var closed: Bool
        var error: Int32 = 0
        var description: String { "text: \(text.debugDescription), closed: \(closed), errno: \(error)" }
    }

    /// Reads until the server closes the connection (or 15 s pass); what it sent. The read blocks
    /// a thread of its own, never one the in-process server needs to answer.
    static func readUntilClosed(_ descriptor: Int32) async throws -> Outcome {
        try await LoopbackHTTP.offThePool {
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = recv(descriptor, &buffer, buffer.count, 0)
                if count == 0 { return Outcome(text: String(decoding: received, as: UTF8.self), closed: true) }
                if count < 0 {
                    let error = errno
                    if error == EINTR { continue }
                    // A reset is the server closing too (it does so when bytes it will not read remain).
                    return Outcome(text: String(decoding: received, as: UTF8.self), closed: error == ECONNRESET, error: error)
                }
                received.append(contentsOf: buffer[0..<count])
            }
        }
    }

    @Test func headersThatDoNotArriveAndIdleKeepAliveConnectionsAreClosed() async throws {
        let server = try await TestServer.make()
        let (port, running) = try await Self.serve(server, idleTimeout: .seconds(1))
        defer { running.cancel() }

        // Headers trickled a byte at a time, never finished: closed after about a second.
        let trickle = try Self.connect(port)
        defer { close(trickle) }
        let started = ContinuousClock.now
        for byte in "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ".map(String.init) {
            Self.write(trickle, byte)
            if ContinuousClock.now - started > .milliseconds(800) { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        let slow = try await Self.readUntilClosed(trickle)
        #expect(slow.closed && slow.text.isEmpty, "\(slow)")
        #expect(ContinuousClock.now - started < .seconds(12))  // 1 s, but a loaded machine runs timers late

        // A keep-alive connection is served, then closed once idle.
        let idle = try Self.connect(port)
        defer { close(idle) }
        Self.write(idle, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        let served = try await Self.readUntilClosed(idle)
        #expect(served.closed && served.text.hasPrefix("HTTP/1.1 200"), "\(served)")
        await server.pool.shutdown()
    }

    /// Connections to `port` the server still holds open (in /proc/net/tcp: the local port,
    /// not listening, and an inode, which only a socket some process has open has). A socket
    /// the server has closed lingers in TIME_WAIT with inode 0.
    static func heldConnections(port: Int) -> Int {
        let hexPort = String(format: ":%04X", port)
        let table = (try? String(contentsOfFile: "/proc/net/tcp", encoding: .utf8)) ?? ""
        return table.split(separator: "\n").dropFirst().filter { line in
            let fields = line.split(separator: " ")
            return fields.count > 9 && fields[1].hasSuffix(hexPort) && fields[3] != "0A" && fields[9] != "0"
        }.count
    }

    /// A head larger than the server reads (256 KB) is answered 400, and once the client goes
    /// the server closes its side at once, not at the idle timeout (a minute here): before the
    /// lingering close it stopped reading after the answer, never saw the client leave, and
    /// each such connection held its buffers until the idle timeout.
    @Test func anOversizedHeadIsRefusedAndItsConnectionReleasedAtOnce() async throws {
        let server = try await TestServer.make()
        let (port, running) = try await Self.serve(server, idleTimeout: .seconds(60))
        defer { running.cancel() }

        let head = "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + String(repeating: "b", count: 262_144) + "\r\n\r\n"
        let answers = try await LoopbackHTTP.offThePool {
            (0..<20).map { _ -> Outcome in
                guard let descriptor = try? Self.connect(port) else { return Outcome(text: "", closed: false, error: -1) }
                defer { close(descriptor) }
                var sent = 0
                let bytes = Array(head.utf8)
                while sent < bytes.count {
                    let count = bytes[sent...].withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                    if count <= 0 { break }
                    sent += count
                }
                var received: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 4096)
                while true {
                    let count = recv(descriptor, &buffer, buffer.count, 0)
                    if count <= 0 {
                        return Outcome(text: String(decoding: received, as: UTF8.self), closed: count == 0 || errno == ECONNRESET)
                    }
                    received.append(contentsOf: buffer[0..<count])
                }
            }
        }
        for answer in answers { #expect(answer.text.hasPrefix("HTTP/1.1 400") && answer.closed, "\(answer)") }
        // The clients have gone; within a few seconds (the linger is 2 s) no socket is left.
        var waiting = Self.heldConnections(port: port)
        for _ in 0..<50 where waiting > 0 {
            try await Task.sleep(for: .milliseconds(100))
            waiting = Self.heldConnections(port: port)
        }
        #expect(waiting == 0, "\(waiting) connections still held after their clients closed")
        await server.pool.shutdown()
    }

    /// A submission announcing 4,000 bytes of body with `token`, then a byte of it every
    /// 200 ms (which would take 13 minutes), until the server closes or 30 s pass; what it sent.
    static func trickleBody(port: Int, token: String) async throws -> Outcome {
        try await LoopbackHTTP.offThePool { () -> Outcome in
            guard let descriptor = try? Self.connect(port) else { return Outcome(text: "", closed: false, error: -1) }
            defer { close(descriptor) }
            Self.write(
                descriptor,
                "POST /v1/campuses/north/attestations HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\n"
                    + "Content-Type: application/json\r\nContent-Length: 4000\r\n\r\n")
            var flags = fcntl(descriptor, F_GETFL)
            flags |= O_NONBLOCK
            _ = fcntl(descriptor, F_SETFL, flags)
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            for _ in 0..<150 {
                Self.write(descriptor, " ")
                usleep(200_000)
                let count = recv(descriptor, &buffer, buffer.count, 0)
                if count == 0 { return Outcome(text: String(decoding: received, as: UTF8.self), closed: true) }
                if count > 0 { received.append(contentsOf: buffer[0..<count]) }
                if count < 0, errno != EAGAIN, errno != EWOULDBLOCK {
                    return Outcome(text: String(decoding: received, as: UTF8.self), closed: errno == ECONNRESET, error: errno)
                }
            }
            return Outcome(text: String(decoding: received, as: UTF8.self), closed: false)
        }
    }

    /// A body trickled a byte at a time is cut off: 408 after `bodyTimeout` (10 s), with the
    /// connection closed, where before it held the connection as long as the client liked
    /// (the idle timeout does not apply while a request is read).
    @Test func aBodyThatTricklesIsCutOffAfterTheBodyTimeout() async throws {
        let (server, campus) = try await AttestationTests.setUp(clock: try TestClock("2026-11-20T14:00:00Z"))
        let (_, member) = try await server.user("m@example.edu", at: campus)
        let (port, running) = try await Self.serve(server, idleTimeout: .seconds(60))
        defer { running.cancel() }

        let started = ContinuousClock.now
        let outcome = try await Self.trickleBody(port: port, token: member)
        let elapsed = ContinuousClock.now - started
        #expect(outcome.text.hasPrefix("HTTP/1.1 408") && outcome.text.contains("body-timeout") && outcome.closed, "\(outcome)")
        #expect(elapsed >= .seconds(9) && elapsed < .seconds(25), "\(elapsed)")
        #expect(try await AttestationTests.count(server, campus) == 0)
        await server.pool.shutdown()
    }

    /// A request refused before its body is read (an unknown token: 401 at once) whose body
    /// then trickles is closed at the body's deadline too; it had held its connection for as
    /// long as the client went on sending, no token needed (found with issue 34's change).
    @Test func aRefusedRequestWhoseBodyTricklesIsClosedAtTheBodyTimeout() async throws {
        let (server, _) = try await AttestationTests.setUp(clock: try TestClock("2026-11-20T14:00:00Z"))
        let (port, running) = try await Self.serve(server, idleTimeout: .seconds(60))
        defer { running.cancel() }

        let started = ContinuousClock.now
        let outcome = try await Self.trickleBody(port: port, token: String(repeating: "A", count: 43))
        let elapsed = ContinuousClock.now - started
        #expect(outcome.text.hasPrefix("HTTP/1.1 401") && outcome.closed, "\(outcome)")
        #expect(!outcome.text.contains("HTTP/1.1 408"), "\(outcome)")  // one answer to one request
        #expect(elapsed >= .seconds(9) && elapsed < .seconds(25), "\(elapsed)")
        await server.pool.shutdown()
    }
}
