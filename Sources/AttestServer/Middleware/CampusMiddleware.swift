import Hummingbird
import Tenancy

/// Resolves `{campus}` on every campus route; an unknown slug is a 404.
package struct CampusMiddleware: RouterMiddleware {
    package typealias Context = AttestRequestContext
    package let directory: CampusDirectory

    package init(directory: CampusDirectory) { self.directory = directory }

    package func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let slug = context.parameters.get("campus") ?? ""
        guard let campus = try await directory.campus(slug: slug) else {
            throw Problem.notFound("There is no campus \"\(slug)\". Check the campus slug in the URL.")
        }
        var context = context
        context.campus = campus
        // No logger metadata: the request's log line is written above this middleware and
        // already names the campus in its path; a copy of the logger's storage cost 2% a read.
        return try await next(request, context)
    }
}
