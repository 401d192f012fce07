import Foundation
import Hummingbird
import Identity
import NIOCore
import Tenancy

/// The request context of every route: the campus and session once middleware found them.
public struct AttestRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// Set by `CampusMiddleware` on every `/v1/campuses/{campus}` route.
    public var campus: Campus?
    /// Set by `AuthenticationMiddleware` on routes that need a signed-in user.
    public var session: SessionStore.Session?
    /// A guest's visit, when the bearer token is a guest's day pass (DESIGN §12): it opens the
    /// survey, the submission and the badge, and no route that needs `session`.
    public var guest: GuestVisit?
    /// The machine a machine token stands for, as the audit log names it (`scim:<name>`).
    public var machine: String?
    /// The connection's peer, taken when the request arrived (NIO forgets it once the
    /// connection closes) and written out only when a route asks: most never do.
    private let peer: SocketAddress?
    /// The address the connection came from (the proxy's, behind one).
    public var peerAddress: String? { peer?.ipAddress }
    /// Behind a trusted proxy, the client it names (set by `ClientAddressMiddleware`).
    private var forwardedClient: String?
    /// The client's address: the peer's, or behind a trusted proxy the one it names in
    /// `X-Forwarded-For` (set by `ClientAddressMiddleware`). What rate limits count by.
    public var clientAddress: String? {
        get { forwardedClient ?? peerAddress }
        set { forwardedClient = newValue }
    }
    /// The connection, to end it when a request body does not arrive in time.
    package let channel: any Channel

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
        peer = source.channel.remoteAddress
    }

    /// The largest request body any route accepts (64 KiB); more is a 413.
    public var maxUploadSize: Int { 64 * 1024 }
    /// How long a request body may take to arrive, all of it (10 s); slower is a 408 and the
    /// connection is closed. The idle timeout does not apply while a request is being read,
    /// so without this a client trickling a body a byte at a time held its connection for as
    /// long as it liked.
    public static let bodyTimeout: Duration = .seconds(10)

    /// JSON responses without escaped slashes ("America/New_York").
    public var responseEncoder: JSONEncoder { Self.encoder }
    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        return encoder
    }()

    /// The resolved campus (middleware guarantees it on campus routes).
    public func requireCampus() throws -> Campus {
        guard let campus else { throw Problem.internalError }
        return campus
    }

    /// The signed-in user's session (middleware guarantees it on authenticated routes).
    public func requireSession() throws -> SessionStore.Session {
        guard let session else {
            // A guest's pass is a valid credential here, just not one this route takes: say so.
            if guest != nil { throw Problem.unauthorized(Problem.guestPassScope, error: "insufficient_scope") }
            throw Problem.unauthorized("Sign in first.")
        }
        return session
    }

    public func requireMachine() throws -> String {
        guard let machine else { throw Problem.unauthorized("Send a machine's token as Authorization: Bearer <token>.") }
        return machine
    }
}
