import AttestPostgres
import Foundation
import Hummingbird

/// An error response in RFC 9457 form (`application/problem+json`). Every error the API
/// returns is one of these; `ProblemMiddleware` turns anything else into one.
public struct Problem: Error, HTTPResponseError, Sendable, Equatable {
    /// One invalid field of a request and what is wrong with it.
    public struct FieldError: Codable, Sendable, Equatable {
        public var field: String
        public var message: String
        public init(field: String, message: String) {
            self.field = field
            self.message = message
        }
    }

    public var status: HTTPResponse.Status
    /// A short, stable kebab-case name: the `type` URI is `/problems/<slug>`.
    public var slug: String
    public var title: String
    public var detail: String
    public var errors: [FieldError]
    public var headers: HTTPFields
    /// The most bytes the route takes, on a `body-too-large` that knows it (the pages name it
    /// in their language; the JSON's detail names it already).
    public var limit: Int?

    public init(
        _ status: HTTPResponse.Status, slug: String, title: String, detail: String, errors: [FieldError] = [],
        headers: HTTPFields = [:]
    ) {
        self.status = status
        self.slug = slug
        self.title = title
        self.detail = detail
        self.errors = errors
        self.headers = headers
    }

    package struct Body: Encodable {
        package var type: String
        package var title: String
        package var status: Int
        package var detail: String
        package var errors: [FieldError]?
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        let body = Body(
            type: "/problems/\(slug)", title: title, status: status.code, detail: detail,
            errors: errors.isEmpty ? nil : errors)
        var headers = self.headers
        headers[.contentType] = "application/problem+json"
        headers[.cacheControl] = "no-store"
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = try encoder.encode(body)
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    // MARK: The problems more than one route returns

    public static let databaseUnavailable = Problem(
        .serviceUnavailable, slug: "database-unavailable", title: "Database unavailable",
        detail: "The database cannot be reached right now. Retry in a few seconds.",
        headers: [.retryAfter: "2"])

    /// A session an operator minted asked for a member's private data.
    public static let operatorSession = Problem(
        .forbidden, slug: "operator-session", title: "Not with an operator's session",
        detail: "This session was made by an operator (`attest token issue`), not signed in to by the member: a member's own "
            + "private data (journal, episodes, exports, links, profile and health records) opens only in a session the member "
            + "signed in to. Sign in as the member.")

    /// What a request wrote refers to something removed while it ran (its member or campus
    /// erased): nothing was kept.
    public static let goneMeanwhile = Problem(
        .conflict, slug: "gone-meanwhile", title: "Removed meanwhile",
        detail: "What this request refers to was removed while it ran (an account or a campus erased, say); nothing was kept. "
            + "Reload, or sign in again.")

    public static func notFound(_ detail: String) -> Problem {
        Problem(.notFound, slug: "not-found", title: "Not found", detail: detail)
    }

    public static let internalError = Problem(
        .internalServerError, slug: "internal-error", title: "Internal error",
        detail: "Something went wrong on the server. It has been logged; retry, and tell the campus IT team if it persists.")
}
