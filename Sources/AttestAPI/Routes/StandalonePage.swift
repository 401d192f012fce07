import HTTPTypes
import Hummingbird

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
}
