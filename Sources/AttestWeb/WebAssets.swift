import AttestPlugins
import AttestServer
import Crypto
import Foundation
import Hummingbird
import Mustache

/// The pages' templates and static files, embedded in the binary at build time
/// (`EmbedWebPlugin`). A static file is served under a name holding its content's hash
/// (`/static/site.3f9c0a1b2c.css`), so it may be cached for a year: a new build names it anew.
struct WebAssets: Sendable {
    struct Asset: Sendable {
        var body: ByteBuffer
        var contentType: String
    }

    let library: MustacheLibrary
    /// By hashed name (`site.3f9c0a1b2c.css`).
    let files: [String: Asset]
    /// The path of each static file by its plain name (`site.css` → `/static/site.3f9c0a1b2c.css`).
    let paths: [String: String]
    /// Total bytes of each static file, by plain name (what a page's weight adds up).
    let sizes: [String: Int]
    /// The pages' words by language code and key (`texts/<code>.json`), English filling what
    /// another language lacks.
    let texts: [String: [String: String]]

    /// Every template and static file, or why one cannot be used (a template that does not
    /// parse). Tests hold this to `.success`; a server with a broken build shows an error page.
    static let shared: Result<WebAssets, WebAssetsError> = load(embeddedWebFiles)

    static func load(_ embedded: [String: String]) -> Result<WebAssets, WebAssetsError> {
        var library = MustacheLibrary()
        var files: [String: Asset] = [:], paths: [String: String] = [:], sizes: [String: Int] = [:]
        var texts: [String: [String: String]] = [:]
        for (path, text) in embedded.sorted(by: { $0.key < $1.key }) {
            if path.hasPrefix("templates/"), path.hasSuffix(".mustache") {
                let name = String(path.dropFirst("templates/".count).dropLast(".mustache".count))
                do { try library.register(text, named: name) } catch {
                    return .failure(WebAssetsError(file: path, reason: "\(error)"))
                }
            } else if path.hasPrefix("static/") {
                let name = String(path.dropFirst("static/".count))
                let digest = SHA256.hash(data: Data(text.utf8)).prefix(5).map { String(format: "%02x", $0) }.joined()
                let dot = name.lastIndex(of: ".") ?? name.endIndex
                let hashed = name[..<dot] + "." + digest + name[dot...]
                files[String(hashed)] = Asset(body: ByteBuffer(string: text), contentType: contentType(name))
                paths[name] = "/static/" + hashed
                sizes[name] = text.utf8.count
            } else if path.hasPrefix("texts/"), path.hasSuffix(".json") {
                let language = String(path.dropFirst("texts/".count).dropLast(".json".count))
                switch Self.texts(text) {
                case .success(let table): texts[language] = table
                case .failure(let reason): return .failure(WebAssetsError(file: path, reason: reason.description))
                }
            }
        }
        let english = texts["en"] ?? [:]
        for (language, table) in texts { texts[language] = table.merging(english) { own, _ in own } }
        return .success(WebAssets(library: library, files: files, paths: paths, sizes: sizes, texts: texts))
    }

    /// A language's file: one JSON object whose every member is a text.
    static func texts(_ file: String) -> Result<[String: String], WebAssetsError.Reason> {
        let value: JSONValue
        do { value = try JSONValue(parsing: Array(file.utf8)) } catch { return .failure(.init(description: "not JSON: \(error)")) }
        guard case .object(let members) = value else { return .failure(.init(description: "not a JSON object of texts by key")) }
        var table: [String: String] = [:]
        for (key, member) in members {
            guard case .string(let text) = member else { return .failure(.init(description: "\(key) is not a string")) }
            table[key] = text
        }
        return .success(table)
    }

    static func contentType(_ name: String) -> String {
        switch name.split(separator: ".").last {
        case "css": "text/css; charset=utf-8"
        case "js": "text/javascript; charset=utf-8"
        case "svg": "image/svg+xml"
        default: "application/octet-stream"
        }
    }

    /// `GET /static/{hashed name}`: a year's public caching; an unknown name is a 404.
    static func register(on router: Router<AttestRequestContext>) {
        router.get("static/:file") { _, context -> Response in
            guard case .success(let assets) = shared, let name = context.parameters.get("file"), let asset = assets.files[name] else {
                return Response(
                    status: .notFound, headers: [.contentType: "text/plain; charset=utf-8"],
                    body: .init(byteBuffer: ByteBuffer(string: "Not found.\n")))
            }
            return Response(
                status: .ok,
                headers: [
                    .contentType: asset.contentType, .cacheControl: "public, max-age=31536000, immutable",
                    .xContentTypeOptions: "nosniff",
                ],
                body: .init(byteBuffer: asset.body))
        }
    }
}

struct WebAssetsError: Error, CustomStringConvertible {
    struct Reason: Error, CustomStringConvertible {
        var description: String
    }

    var file: String
    var reason: String
    var description: String {
        "the page file \(file) cannot be used (\(reason)): this build is broken; rebuild from a released version"
    }
}
