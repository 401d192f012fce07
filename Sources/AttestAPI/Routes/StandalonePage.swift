import AttestFoundation
import AttestPlugins
import AttestServer
import HTTPTypes
import Hummingbird
import Tenancy

/// A small page the API answers to a person without a session (a clinician's link, an
/// unsubscribe link): no script, no style or frame from elsewhere, not cached or indexed, and
/// no referrer carrying its token away. `status` and `headers` (such as `Retry-After`) for a
/// refusal shown to a person as a page.
enum StandalonePage {
    static func response(_ html: String, status: HTTPResponse.Status = .ok, headers extra: HTTPFields = [:]) -> Response {
        var headers: HTTPFields = [
            .contentType: "text/html; charset=utf-8", .cacheControl: "private, no-store",
            .contentSecurityPolicy: "default-src 'none'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ]
        // A refusal's own fields (`Retry-After`), never in place of these.
        for field in extra where headers[field.name] == nil { headers.append(field) }
        for (name, value) in [
            ("Referrer-Policy", "no-referrer"), ("X-Robots-Tag", "noindex, nofollow"), ("X-Content-Type-Options", "nosniff"),
        ] {
            if let name = HTTPField.Name(name) { headers[name] = value }
        }
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: html)))
    }

    /// A whole page: `title` (the campus's name after it, when known) and `body`, in `language`.
    static func html(language: String, title: String, campus: Campus?, body: String) -> String {
        let suffix = campus.map { " · \(HTMLText.escape($0.name))" } ?? ""
        return """
            <!doctype html><html lang="\(language)"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">\
            <title>\(title)\(suffix)</title></head><body><main>\(body)</main></body></html>
            """
    }

    /// The best language of `request`'s `Accept-Language` these pages speak, else English.
    static func language(_ request: Request) -> String {
        Questionnaire.bestLanguage(request.headers[.acceptLanguage] ?? "", available: Set(WrittenLanguages.all)) ?? "en"
    }
}

/// For the routes a person reaches by following a link with no session (an unsubscribe link, a
/// clinician's link): a refusal of the link's own (404, 422, 429) to a browser, a request that
/// accepts `text/html`, is a page saying what went wrong and how to mend it, in the browser's
/// language, with the refusal's status and fields (`Retry-After`); to anything else (a mail
/// client's one-click POST, a script) it stays `application/problem+json`. A database that
/// cannot be reached (503) or a body too slow or too large stays what it is. It stands before
/// `CampusMiddleware`, so a link whose campus is unknown (cut short, mistyped) is a page too.
struct LinkRefusalPages: RouterMiddleware {
    typealias Context = AttestRequestContext
    /// The page's HTML for a refusal: the campus when the link's is known, the language to speak.
    typealias Page = @Sendable (_ refusal: Problem, _ campus: Campus?, _ language: String) -> String

    let campuses: CampusDirectory
    let page: Page

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let problem as Problem {
            guard [.notFound, .unprocessableContent, .tooManyRequests].contains(problem.status),
                request.headers[.accept]?.contains("text/html") == true
            else { throw problem }
            // Only for the page's words: a campus that cannot be read now is named by none.
            let campus = try? await campuses.campus(slug: context.parameters.get("campus") ?? "")
            let html = page(problem, campus, StandalonePage.language(request))
            return StandalonePage.response(html, status: problem.status, headers: problem.headers)
        }
    }
}
