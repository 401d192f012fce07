import Hummingbird

/// Who the client is, for rate limits and logs: the connection's peer, unless the peer is one
/// of the `trustedProxies`; then the address the proxy appended to `X-Forwarded-For` (the
/// rightmost one not itself a trusted proxy), since every hop to its left could be forged by
/// the client.
package struct ClientAddressMiddleware: RouterMiddleware {
    package typealias Context = AttestRequestContext
    package let trustedProxies: Set<String>

    package func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard !trustedProxies.isEmpty, let peer = context.peerAddress, trustedProxies.contains(peer) else {
            return try await next(request, context)
        }
        var context = context
        context.clientAddress = Self.forwardedClient(request.headers[values: .init("X-Forwarded-For")!], trusted: trustedProxies) ?? peer
        return try await next(request, context)
    }

    /// The rightmost address of the `X-Forwarded-For` values that is not a trusted proxy.
    package static func forwardedClient(_ values: [String], trusted: Set<String>) -> String? {
        let hops = values.flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces) }
        return hops.reversed().first { !$0.isEmpty && $0.utf8.count <= 64 && !trusted.contains($0) }
    }
}
