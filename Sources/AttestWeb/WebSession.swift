import AttestFoundation
import AttestPlugins
import AttestServer
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
