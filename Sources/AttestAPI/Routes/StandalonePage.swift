import HTTPTypes
import Hummingbird

/// A small page the API answers to a person without a session (a clinician's link, an
/// unsubscribe link): no script, no style or frame from elsewhere, not cached or indexed, and
/// no referrer carrying its token away.
enum StandalonePage {
    static func response(_ html: String) -> Response {
        var headers: HTTPFields = [
            .contentType: "text/html; charset=utf-8", .cacheControl: "private, no-store",
            .contentSecurityPolicy: "default-src 'none'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ]
        for (name, value) in [
            ("Referrer-Policy", "no-referrer"), ("X-Robots-Tag", "noindex, nofollow"), ("X-Content-Type-Options", "nosniff"),
        ] {
            if let name = HTTPField.Name(name) { headers[name] = value }
        }
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: html)))
    }
}
