import AttestPluginHTTP
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Synchronization

/// An HTTP server on 127.0.0.1 for a provider's or a sink's tests: it records every request
/// and answers each with the next response queued (200 with an empty body once they run
/// out), optionally after a delay. `url(_:)` names it; `http` is the platform's client with
/// loopback allowed, as an operator allows an internal host.
public final class LoopbackServer: Sendable {
    /// A request as it arrived.
    public struct Request: Sendable {
        public var method: String
        public var path: String
        public var headers: [(name: String, value: String)]
        public var body: Data
        /// The status it was answered with; nil while its answer waits out its delay.
        public var answeredStatus: Int?

        /// The first value of a header field, by name in any case.
        public func header(_ name: String) -> String? {
            headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
        }
    }

    /// What to answer.
    public struct Answer: Sendable {
        public var status: Int
        public var headers: [(name: String, value: String)]
        public var body: Data
        public var delay: Duration

        public init(status: Int = 200, headers: [(name: String, value: String)] = [], body: Data = Data(), delay: Duration = .zero) {
            (self.status, self.headers, self.body, self.delay) = (status, headers, body, delay)
        }

        /// A JSON body with its content type.
        public static func json(_ text: String, status: Int = 200) -> Answer {
            Answer(status: status, headers: [("Content-Type", "application/json")], body: Data(text.utf8))
        }
    }

    private let state = Mutex<(requests: [Request], answers: [Answer])>(([], []))
    private let task: Task<Void, any Error>
    /// What a request gets once the queued answers run out.
    private let fallback: Answer
    public let port: Int

    private init(port: Int, task: Task<Void, any Error>, fallback: Answer) {
        self.port = port
        self.task = task
        self.fallback = fallback
    }

    /// Every request received so far, in order.
    public var requests: [Request] { state.withLock { $0.requests } }

    /// Queues answers for the next requests, in order.
    public func answer(_ answers: Answer...) { state.withLock { $0.answers.append(contentsOf: answers) } }

    /// `http://127.0.0.1:PORT/path`.
    public func url(_ path: String) -> URL {
        let base = "http://127.0.0.1:\(port)"
        return URL(string: base + (path.hasPrefix("/") ? path : "/" + path)) ?? URL(filePath: base).appending(path: path)
    }

    /// The platform's outbound client, allowed to reach this server.
    public static let http = AsyncPluginHTTPClient(policy: .init(allowedHosts: ["127.0.0.1"]))

    /// Starts a server answering every method on every path, on `port` (0: any free one);
    /// `fallback` is what a request gets once the queued answers run out.
    public static func start(port: Int = 0, fallback: Answer = Answer()) async throws -> LoopbackServer {
        let holder = Holder()
        let router = Router()
        router.on("**", method: .post) { request, _ in try await handle(request, holder) }
        router.on("**", method: .get) { request, _ in try await handle(request, holder) }
        router.on("**", method: .put) { request, _ in try await handle(request, holder) }
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        var logger = Logger(label: "loopback")
        logger.logLevel = .critical
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)),
            onServerRunning: { continuation.yield($0.localAddress?.port ?? 0) }, logger: logger)
        let task = Task { try await app.runService(gracefulShutdownSignals: []) }
        var iterator = ports.makeAsyncIterator()
        guard let bound = await iterator.next(), bound > 0 else {
            task.cancel()
            throw CancellationError()
        }
        let server = LoopbackServer(port: bound, task: task, fallback: fallback)
        holder.server.withLock { $0 = server }
        return server
    }

    /// The server, once started, for the routes made before it.
    private final class Holder: Sendable {
        let server = Mutex<LoopbackServer?>(nil)
    }

    private static func handle(_ request: Hummingbird.Request, _ holder: Holder) async throws -> Response {
        guard let server = holder.server.withLock({ $0 }) else { return Response(status: .serviceUnavailable) }
        var request = request
        let body = try await request.collectBody(upTo: 4 << 20)
        let (answer, index) = server.state.withLock { state -> (Answer, Int) in
            let answer = state.answers.isEmpty ? server.fallback : state.answers.removeFirst()
            state.requests.append(
                Request(
                    method: request.method.rawValue, path: request.uri.path,
                    headers: request.headers.map { ($0.name.rawName, $0.value) }, body: Data(buffer: body), answeredStatus: nil))
            return (answer, state.requests.count - 1)
        }
        if answer.delay > .zero { try await Task.sleep(for: answer.delay) }
        server.state.withLock { $0.requests[index].answeredStatus = answer.status }
        var headers = HTTPFields()
        for (name, value) in answer.headers { if let field = HTTPField.Name(name) { headers[field] = value } }
        return Response(status: .init(code: answer.status), headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: answer.body)))
    }

    /// Stops the server.
    public func stop() async {
        task.cancel()
        _ = try? await task.value
    }
}
