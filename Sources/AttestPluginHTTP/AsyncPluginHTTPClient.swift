import AsyncHTTPClient
import AttestPlugins
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization
import Tracing

/// The one client for everything the server fetches or sends outside (identity providers'
/// keys, webhooks, feeds), lent to plugins as `PluginContext.http`. What it will reach:
///
/// - `https` only; plain `http` only to a host the operator allows by name.
/// - Public addresses only: a host that resolves to a loopback, private, link-local (cloud
///   metadata), carrier-grade NAT or other non-public address is refused unless allowed by
///   name. The connection goes to the address that was checked (pinned), so a name that
///   resolves differently a moment later (DNS rebinding) cannot slip through.
/// - No redirects: a 3xx is answered as it is.
/// - A deadline on every request (its `timeout`, at most an hour; connecting at most 5 s),
///   and responses of at most `maxResponseBytes`.
public struct AsyncPluginHTTPClient: PluginHTTPClient {
    /// What the operator allows beyond the public internet over https.
    public struct Policy: Sendable, Equatable {
        /// Host names or literal addresses that may be reached over plain http and at
        /// non-public addresses (internal receivers, tests on loopback). Default none.
        public var allowedHosts: Set<String>
        /// Responses past this are refused. Default 4 MiB.
        public var maxResponseBytes: Int

        public init(allowedHosts: Set<String> = [], maxResponseBytes: Int = 4 << 20) {
            self.allowedHosts = Set(allowedHosts.map { $0.lowercased() })
            self.maxResponseBytes = max(1, maxResponseBytes)
        }
    }

    public let policy: Policy

    public init(policy: Policy = Policy()) { self.policy = policy }

    /// A client for the plugin tests of a package outside this one.
    public init(maxResponseBytes: Int) { self.init(policy: Policy(maxResponseBytes: maxResponseBytes)) }

    /// Each request is a client span (OpenTelemetry's HTTP conventions; the URL without its
    /// query, which may hold a secret), and carries the span's `traceparent` when a tracer
    /// is bootstrapped, so the receiver's trace continues this one.
    public func send(_ request: PluginHTTPRequest) async throws -> PluginHTTPResponse {
        if InstrumentationSystem.tracer is NoOpTracer { return try await send(request, context: nil) }
        return try await withSpan(request.method, ofKind: .client) { span in
            if span.isRecording {
                span.updateAttributes { attributes in
                    attributes["http.request.method"] = request.method
                    attributes["url.full"] = request.url.forLogs
                    attributes["server.address"] = request.url.host ?? ""
                    if let port = request.url.port { attributes["server.port"] = port }
                }
            }
            let response = try await send(request, context: span.context)
            if span.isRecording {
                span.attributes["http.response.status_code"] = response.status
                if response.status >= 500 { span.setStatus(.init(code: .error)) }
            }
            return response
        }
    }

    private func send(_ request: PluginHTTPRequest, context: ServiceContext?) async throws -> PluginHTTPResponse {
        let (url, address) = try await checked(request.url)
        var outgoing = HTTPClientRequest(url: url.absoluteString)
        outgoing.method = .init(rawValue: request.method)
        for (name, value) in request.headers { outgoing.headers.add(name: name, value: value) }
        if let context { InstrumentationSystem.instrument.inject(context, into: &outgoing.headers, using: HTTPHeadersInjector()) }
        if let body = request.body { outgoing.body = .bytes(ByteBuffer(bytes: body)) }
        // At most an hour: a plugin's timeout never overflows nanoseconds.
        let seconds = min(max(request.timeout.components.seconds, 0), 3_600)
        let timeout = TimeAmount.nanoseconds(seconds * 1_000_000_000 + request.timeout.components.attoseconds / 1_000_000_000)
        let pinned = PinnedClients.client(host: url.host ?? "", address: address)
        // A turn among the host's connections first: the deadline is the answer's, not the queue's.
        let gate = pinned.gates.gate(for: url)
        guard await gate.enter(within: timeout) else {
            try Task.checkCancellation()
            throw PluginHTTPError.timedOut
        }
        defer { gate.leave() }
        do {
            let response = try await pinned.client.execute(outgoing, timeout: timeout)
            let body: ByteBuffer
            do { body = try await response.body.collect(upTo: policy.maxResponseBytes) } catch { throw PluginHTTPError.responseTooLarge }
            return PluginHTTPResponse(
                status: Int(response.status.code), body: Data(body.readableBytesView),
                headers: response.headers.map { ($0.name, $0.value) })
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout || error == .connectTimeout {
            throw PluginHTTPError.timedOut
        } catch let error as PluginHTTPError {
            throw error
        } catch let error as IOError {
            // A socket's error as the system says it, with where (NIO's own words for a refused
            // connection read "connection reset (error set): Connection refused) (errno: 111)").
            let port = url.port ?? (url.scheme?.lowercased() == "https" ? 443 : 80)
            throw PluginHTTPError.connectionFailed("\(url.host ?? ""):\(port): \(String(cString: strerror(error.errnoCode)))")
        } catch {
            throw PluginHTTPError.connectionFailed("\(error)")
        }
    }

    /// The URL, if this policy lets it be reached, and the address to connect to (nil for a
    /// literal address, which needs no lookup).
    func checked(_ url: URL) async throws -> (URL, String?) {
        guard let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased(), !host.isEmpty else {
            throw PluginHTTPError.refused("\(url.forLogs.prefix(200)) is not an absolute http(s) URL")
        }
        let allowed = policy.allowedHosts.contains(host)
        guard scheme == "https" || (scheme == "http" && allowed) else {
            throw PluginHTTPError.refused(
                "\(scheme)://\(host) is not https: only https is reached, plain http only for a host the operator allows (--allow-outbound-host)"
            )
        }
        if let literal = OutboundAddress(literal: host) {
            guard literal.isPublic || allowed else { throw Self.privateRefusal(host, literal) }
            return (url, nil)
        }
        let addresses = try await NIOThreadPool.singleton.runIfActive { OutboundAddress.resolve(host) }
        guard let first = addresses.first else { throw PluginHTTPError.connectionFailed("cannot resolve \(host)") }
        if !allowed, let inside = addresses.first(where: { !$0.isPublic }) { throw Self.privateRefusal(host, inside) }
        return (url, first.description)
    }

    static func privateRefusal(_ host: String, _ address: OutboundAddress) -> PluginHTTPError {
        .refused(
            "\(host) is \(address), a loopback, private or link-local address: allow the host by name (--allow-outbound-host) if it is meant"
        )
    }
}

/// async-http-client clients, one per host and the address it was checked at, kept for the
/// life of the process (an `HTTPClient` must be shut down, never just dropped), each with the
/// gates that let `connections` requests reach each of the host's ports at once. Redirects are
/// off in all of them.
enum PinnedClients {
    struct Pinned: Sendable {
        let client: HTTPClient
        let gates: PortGates
    }

    private static let clients = Mutex<[String: Pinned]>([:])
    static let limit = 64
    /// Requests to one host at once: as many as the outbox delivers at once for a campus
    /// (32 a round). More wait at the gate, where their deadline has not started: queued
    /// inside async-http-client for a connection, a delivery to a slow receiver spent its
    /// timeout waiting, was sent late, timed out while the receiver answered it and was
    /// delivered again (issue 33's webhook fault found it, with 8 connections; with 32,
    /// two campuses sending to one receiver would do it).
    static let connections = 32

    static func client(host: String, address: String?) -> Pinned {
        let key = host + "|" + (address ?? "")
        let (pinned, evicted) = clients.withLock { clients -> (Pinned, [HTTPClient]) in
            if let pinned = clients[key] { return (pinned, []) }
            var evicted: [HTTPClient] = []
            // The same host at a new address, and past the limit any: shut down, not dropped.
            for (other, old) in clients where other.hasPrefix(host + "|") || clients.count - evicted.count >= limit {
                clients.removeValue(forKey: other)
                evicted.append(old.client)
            }
            var configuration = HTTPClient.Configuration(
                redirectConfiguration: .disallow, timeout: .init(connect: .seconds(5), read: .seconds(60)))
            if let address { configuration.dnsOverride = [host: address] }
            configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = connections
            // A refused or failed connection fails the request at once. Retrying it under
            // the request's deadline, the client held a delivery to a receiver that was down
            // for its whole timeout, and after many failures backed off for up to a minute
            // while requests waited; the outbox retries with a backoff of its own.
            configuration.connectionPool.retryConnectionEstablishment = false
            // `send` makes the request's span; async-http-client's own would record the
            // URL's query, which may hold a key.
            configuration.tracing.tracer = nil
            let pinned = Pinned(client: HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration), gates: PortGates())
            clients[key] = pinned
            return (pinned, evicted)
        }
        for old in evicted { Task { try? await old.shutdown() } }
        return pinned
    }
}

/// A host's gates, one for each scheme and port: async-http-client keeps a pool of
/// `PinnedClients.connections` connections for each, so receivers on two ports of one host
/// (a university's notification service and its pager gateway) wait for no turn of each
/// other's. With one gate a host, a slow receiver held the turns of every other port.
final class PortGates: Sendable {
    private let gates = Mutex<[String: HostGate]>([:])
    /// Ports a host keeps gates for: past this, the idle ones are let go (one in use stays).
    static let limit = 64

    func gate(for url: URL) -> HostGate {
        let scheme = url.scheme?.lowercased() ?? "https"
        let key = "\(scheme):\(url.port ?? (scheme == "http" ? 80 : 443))"
        return gates.withLock { gates in
            if let gate = gates[key] { return gate }
            if gates.count >= Self.limit { gates = gates.filter { !$0.value.isIdle } }
            let gate = HostGate(limit: PinnedClients.connections)
            gates[key] = gate
            return gate
        }
    }

    var count: Int { gates.withLock { $0.count } }
}

/// Writes a tracer's propagation fields (`traceparent`, `tracestate`) as request headers.
struct HTTPHeadersInjector: Injector {
    func inject(_ value: String, forKey key: String, into headers: inout HTTPHeaders) {
        headers.replaceOrAdd(name: key, value: value)
    }
}
