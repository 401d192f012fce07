@testable import AttestHTTP
import AttestTestSupport
import Foundation
import Hummingbird
import Testing

/// A client that opens connections and sends nothing, or trickles its headers, or keeps an
/// idle connection open, holds it for the idle timeout at most.
@Suite("Slow clients")
struct SlowClientTests {
    static func connect(_ port: Int) throws -> Int32 { try LoopbackHTTP.connect(port: port, receiveTimeout: 15) }

    static func write(_ descriptor: Int32, _ text: String) { _ = Array(text.utf8).withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } }

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
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let app = AttestServer.buildApplication(
            configuration: ServerConfiguration(port: 0, idleTimeout: .seconds(1)), services: server.services, logger: TestDatabase.testLogger,
            onServerRunning: { continuation.yield($0) })
        let running = Task { try await app.runService(gracefulShutdownSignals: []) }
        defer { running.cancel() }
        var iterator = ports.makeAsyncIterator()
        let port = try #require(await iterator.next())

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
}
