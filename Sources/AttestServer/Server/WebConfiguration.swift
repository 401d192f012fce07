import AttestPlugins
import Foundation

/// Where the web pages live and what they offer.
public struct WebConfiguration: Sendable {
    /// The pages' public address (`attest serve --public-url https://attest.example.edu`):
    /// the base of the sign-in redirect an identity provider sends browsers back to. Over
    /// https the session cookie is `__Host-` and `Secure`, and pages send HSTS. Without it
    /// the pages work over plain http on this address (development) and offer no
    /// identity-provider sign-in, since no redirect address is known.
    public var publicURL: URL?
    /// The demo sign-in page, listing the campus's people to sign in as with no password:
    /// `attest dev` only; `serve` never sets it.
    public var demoSignIn: Bool

    public init(publicURL: URL? = nil, demoSignIn: Bool = false) {
        self.publicURL = publicURL
        self.demoSignIn = demoSignIn
    }

    /// Whether the pages are served over https (behind the proxy that ends TLS).
    package var secure: Bool { publicURL?.scheme?.lowercased() == "https" }

    /// The public URL's origin and path prefix without a trailing slash ("https://a.example.edu").
    package var origin: String? {
        guard let publicURL else { return nil }
        var text = publicURL.absoluteString
        while text.hasSuffix("/") { text.removeLast() }
        return text
    }

    /// Checks an operator's `--public-url`: an absolute http(s) URL without query or fragment.
    public static func parsePublicURL(_ text: String) -> URL? {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "http",
            let host = url.host, !host.isEmpty, url.query == nil, url.fragment == nil, url.user == nil
        else { return nil }
        return url
    }
}
