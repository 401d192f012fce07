import AttestFoundation
import AttestPlugins
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Identity
import Tenancy

/// The browser's side of a session: a cookie holding the same session token an API client
/// sends as a bearer token (one server-side session, revoked by signing out), and the CSRF
/// token every form carries.
///
/// - Each campus has its own cookie (`__Host-attest-{slug}` over https, `attest-{slug}` over
///   plain http in development): HttpOnly, SameSite=Lax, Path=/, Secure over https. A
///   token from one campus is unknown at another.
/// - A signed-in form's CSRF token is derived from the session token (SHA-256 of it with a
///   label), so it needs no storage and dies with the session. Before sign-in, a form's
///   token is the value of a random `attest-csrf` cookie (double submit). Every POST also
///   refuses `Sec-Fetch-Site: cross-site`.
enum WebSession {
    static func cookieName(campus slug: String, secure: Bool) -> String { (secure ? "__Host-attest-" : "attest-") + slug }
    static func csrfCookieName(secure: Bool) -> String { secure ? "__Host-attest-csrf" : "attest-csrf" }
    static let languageCookie = "attest-lang"

    /// The session token in the request's campus cookie, when it has the shape of one.
    static func token(_ request: Request, campus slug: String, secure: Bool) -> String? {
        guard let value = request.cookies[cookieName(campus: slug, secure: secure)]?.value, SessionStore.isWellFormed(value) else {
            return nil
        }
        return value
    }

    static func sessionCookie(campus slug: String, token: String, maxAge: Int, secure: Bool) -> Cookie {
        Cookie(
            name: cookieName(campus: slug, secure: secure), value: token, maxAge: maxAge, path: "/", secure: secure, httpOnly: true,
            sameSite: .lax)
    }

    static func clearedSessionCookie(campus slug: String, secure: Bool) -> Cookie {
        Cookie(
            name: cookieName(campus: slug, secure: secure), value: "", maxAge: 0, path: "/", secure: secure, httpOnly: true, sameSite: .lax)
    }

    /// A signed-in form's CSRF token: base64url(SHA-256("attest-csrf:" + session token)).
    static func csrf(sessionToken: String) -> String {
        Data(SHA256.hash(data: Data(("attest-csrf:" + sessionToken).utf8))).base64URLEncoded()
    }

    /// Whether two tokens are equal, in time that does not depend on where they differ.
    static func same(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        guard x.count == y.count, !x.isEmpty else { return false }
        var difference: UInt8 = 0
        for index in x.indices { difference |= x[index] ^ y[index] }
        return difference == 0
    }
}

/// A form's fields in order (`application/x-www-form-urlencoded`, or `multipart/form-data`
/// when it carries a file), and its files.
struct WebForm {
    var fields: [(name: String, value: String)]
    /// The files chosen (parts with a file name and some bytes; a file input left empty sends none).
    var files: [MultipartForm.Part] = []

    subscript(name: String) -> String? { fields.first { $0.name == name }?.value }

    /// Every value of a field that may repeat (checkboxes).
    func all(_ name: String) -> [String] { fields.filter { $0.name == name }.map(\.value) }

    func file(_ name: String) -> MultipartForm.Part? { files.first { $0.name == name } }

    /// The request's form body; at most `limit` bytes (default `AttestRequestContext.maxUploadSize`),
    /// within `AttestRequestContext.bodyTimeout`.
    static func read(_ request: Request, context: AttestRequestContext, limit: Int? = nil) async throws -> WebForm {
        let type = request.headers[.contentType] ?? ""
        let boundary = MultipartForm.boundary(contentType: type)
        guard type.lowercased().hasPrefix("application/x-www-form-urlencoded") || boundary != nil else {
            throw Problem(
                .unsupportedMediaType, slug: "unsupported-media-type", title: "Unsupported form",
                detail: "Send the form as application/x-www-form-urlencoded or multipart/form-data, as a browser does.")
        }
        let body = try await request.collectBody(context: context, limit: limit)
        let unreadable = Problem(
            .badRequest, slug: "bad-form", title: "Unreadable form",
            detail: "The form's fields are not well-formed UTF-8. Reload the page and send it again.")
        guard let boundary else {
            guard let form = parse(String(buffer: body)) else { throw unreadable }
            return form
        }
        guard let multipart = MultipartForm.parse(Array(body.readableBytesView), boundary: boundary) else { throw unreadable }
        var form = WebForm(fields: [])
        for part in multipart.parts {
            if part.filename != nil {
                if !part.body.isEmpty { form.files.append(part) }
            } else {
                guard let value = String(validating: part.body, as: UTF8.self) else { throw unreadable }
                form.fields.append((part.name, value))
            }
        }
        return form
    }

    static func parse(_ text: String) -> WebForm? {
        var fields: [(String, String)] = []
        for pair in text.split(separator: "&", omittingEmptySubsequences: true).prefix(500) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = decode(parts[0]), let value = decode(parts.count > 1 ? parts[1] : "") else { return nil }
            fields.append((name, value))
        }
        return WebForm(fields: fields)
    }

    private static func decode(_ text: Substring) -> String? {
        text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }
}
