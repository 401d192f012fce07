import AsyncHTTPClient
import AttestPlugins
import Foundation
import NIOCore
import NIOPosix
import Synchronization

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

    public func send(_ request: PluginHTTPRequest) async throws -> PluginHTTPResponse {
        let (url, address) = try await checked(request.url)
        var outgoing = HTTPClientRequest(url: url.absoluteString)
        outgoing.method = .init(rawValue: request.method)
        for (name, value) in request.headers { outgoing.headers.add(name: name, value: value) }
        if let body = request.body { outgoing.body = .bytes(ByteBuffer(bytes: body)) }
        // At most an hour: a plugin's timeout never overflows nanoseconds.
        let seconds = min(max(request.timeout.components.seconds, 0), 3_600)
        let timeout = TimeAmount.nanoseconds(seconds * 1_000_000_000 + request.timeout.components.attoseconds / 1_000_000_000)
        do {
            let response = try await PinnedClients.client(host: url.host ?? "", address: address).execute(outgoing, timeout: timeout)
            let body: ByteBuffer
            do { body = try await response.body.collect(upTo: policy.maxResponseBytes) } catch { throw PluginHTTPError.responseTooLarge }
            return PluginHTTPResponse(
                status: Int(response.status.code), body: Data(body.readableBytesView),
                headers: response.headers.map { ($0.name, $0.value) })
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout || error == .connectTimeout {
            throw PluginHTTPError.timedOut
        } catch let error as PluginHTTPError {
            throw error
        } catch {
            throw PluginHTTPError.connectionFailed("\(error)")
        }
    }

    /// The URL, if this policy lets it be reached, and the address to connect to (nil for a
    /// literal address, which needs no lookup).
    func checked(_ url: URL) async throws -> (URL, String?) {
        guard let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased(), !host.isEmpty else {
            throw PluginHTTPError.refused("\(url.absoluteString.prefix(200)) is not an absolute http(s) URL")
        }
        let allowed = policy.allowedHosts.contains(host)
        guard scheme == "https" || (scheme == "http" && allowed) else {
            throw PluginHTTPError.refused(
                "\(scheme)://\(host) is not https: only https is reached, plain http only for a host the operator allows (--allow-outbound-host)")
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
            "\(host) is \(address), a loopback, private or link-local address: allow the host by name (--allow-outbound-host) if it is meant")
    }
}

/// async-http-client clients, one per host and the address it was checked at, kept for the
/// life of the process (an `HTTPClient` must be shut down, never just dropped). Redirects are
/// off in all of them.
enum PinnedClients {
    private static let clients = Mutex<[String: HTTPClient]>([:])
    static let limit = 64

    static func client(host: String, address: String?) -> HTTPClient {
        let key = host + "|" + (address ?? "")
        let (client, evicted) = clients.withLock { clients -> (HTTPClient, [HTTPClient]) in
            if let client = clients[key] { return (client, []) }
            var evicted: [HTTPClient] = []
            // The same host at a new address, and past the limit any: shut down, not dropped.
            for (other, old) in clients where other.hasPrefix(host + "|") || clients.count - evicted.count >= limit {
                clients.removeValue(forKey: other)
                evicted.append(old)
            }
            var configuration = HTTPClient.Configuration(
                redirectConfiguration: .disallow, timeout: .init(connect: .seconds(5), read: .seconds(60)))
            if let address { configuration.dnsOverride = [host: address] }
            // As many connections to one host as the outbox delivers at once (32 a campus a
            // round). With async-http-client's default of 8, deliveries to a slow receiver
            // queued for a connection and spent their timeout waiting: one sent late timed
            // out while the receiver was still answering it, and was delivered again
            // (issue 33's webhook fault found it, on a loaded machine).
            configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 32
            let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
            clients[key] = client
            return (client, evicted)
        }
        for old in evicted { Task { try? await old.shutdown() } }
        return client
    }
}
