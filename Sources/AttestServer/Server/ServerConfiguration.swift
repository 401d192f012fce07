import AttestPluginHTTP
import AttestPostgres
import Foundation
import Hummingbird
import HummingbirdCore
import NIOCore

/// Settings of the HTTP server. Every field has a default.
public struct ServerConfiguration: Sendable {
    /// Address to bind. Default `127.0.0.1`.
    public var host: String
    /// TCP port. Default 8080; 0 picks a free one.
    public var port: Int
    /// How long `/readyz` waits for the database before answering 503. Default 2 s.
    public var readinessTimeout: Duration
    /// How long a campus looked up by slug is reused before it is read again. Default 5 s:
    /// `attest campus set` takes effect on every server within this.
    public var campusCacheTTL: Duration
    /// How many attestation batches may be written at once, each on its own connection.
    /// Default 1: while a batch is written the next one gathers, so batches grow with the
    /// load and the database does less work per submission (Benchmarks/submit: 1 beat 2 and
    /// 4). More overlap batches' commits, which may pay where a commit waits long on storage.
    public var writeWorkers: Int
    /// Where `GET /metrics` is served: nil (the default), on `port` with the API; else only on
    /// this port of `host`, which a firewall or a Kubernetes port keeps internal.
    public var metricsPort: Int?
    /// Sign-in and unknown-token limits, per client address and per campus (`RateLimits`).
    public var rateLimits: RateLimits
    /// Addresses of the reverse proxies in front (nginx): only a request from one of these
    /// may name its client in `X-Forwarded-For`. Default none: the peer is the client.
    public var trustedProxies: Set<String>
    /// What outbound requests (identity providers' keys, webhooks, feeds) may reach beyond
    /// https on public addresses: hosts allowed by name. Default none.
    public var outbound: AsyncPluginHTTPClient.Policy
    /// A connection must deliver a request's whole head within this of opening or of its
    /// last response (a slow client's trickle does not count), and an idle keep-alive
    /// connection is closed after it. Default 10 s.
    public var idleTimeout: Duration
    /// The web pages: their public address, and whether the demo sign-in is offered.
    public var web: WebConfiguration
    /// How long this server trusts its last read of the campuses' sign-in generations
    /// (`AuthGenerations`, read every second): past it, kept sessions and badges last only
    /// their short time to live. Default 3 s.
    public var generationsTrustedFor: Duration = .seconds(3)
    /// How long a member's request waits for a campus's community data provider (answered
    /// 503, `community-data-unavailable`, past it) or for each testing-location provider (left
    /// out of the answer and named in `unavailable` past it). Default 2 s.
    public var communityDataBudget: Duration = .seconds(2)
    /// Whether each request is a span (`TraceMiddleware`): set when `serve` or `dev` export
    /// traces (`OTEL_EXPORTER_OTLP_ENDPOINT`). Off, no request pays for a span.
    public var tracing = false

    public init(
        host: String = "127.0.0.1", port: Int = 8080, readinessTimeout: Duration = .seconds(2),
        campusCacheTTL: Duration = .seconds(5), writeWorkers: Int = 1, metricsPort: Int? = nil,
        rateLimits: RateLimits = RateLimits(), trustedProxies: Set<String> = [],
        outbound: AsyncPluginHTTPClient.Policy = .init(), idleTimeout: Duration = .seconds(10),
        web: WebConfiguration = WebConfiguration()
    ) {
        self.web = web
        self.outbound = outbound
        self.idleTimeout = idleTimeout
        self.rateLimits = rateLimits
        self.trustedProxies = trustedProxies
        self.host = host
        self.port = port
        self.metricsPort = metricsPort
        self.readinessTimeout = readinessTimeout
        self.campusCacheTTL = campusCacheTTL
        self.writeWorkers = max(1, writeWorkers)
    }
}

extension ServerConfiguration {
    /// HTTP/1.1 with the idle and slow-client timeout, a lingering close after the last
    /// response (`LingeringCloseHandler`) and the request body's deadline (`BodyDeadlineHandler`).
    package var httpServer: HTTPServerBuilder {
        .http1(
            configuration: .init(
                additionalChannelHandlers: [
                    LingeringCloseHandler(),
                    BodyDeadlineHandler(timeout: .nanoseconds(AttestRequestContext.bodyTimeout.clampedNanoseconds)),
                ],
                idleTimeout: .nanoseconds(idleTimeout.clampedNanoseconds)))
    }
}
