import AttestPlugins
import AttestTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Surveys
import Synchronization
import Testing

@testable import AttestAPI
@testable import AttestServer
@testable import AttestWeb

/// A test's browser over loopback HTTP: keeps cookies as a browser does (by name, dropped
/// at Max-Age=0), follows no redirects, and reads the CSRF token of the last page.
final class WebClient: Sendable {
    let client: LiveClient
    let cookies = Mutex<[String: String]>([:])
    let acceptLanguage: String?

    init(_ client: LiveClient, acceptLanguage: String? = nil) {
        self.client = client
        self.acceptLanguage = acceptLanguage
    }

    struct Page {
        var status: Int
        var headers: HTTPFields
        var body: String
        /// The body's bytes (a recording, a PDF).
        var bytes = Data()
        var location: String? { headers[.location] }
        var setCookies: [String] { headers[values: .setCookie] }

        /// The value of the first `name="csrf"` field on the page.
        var csrf: String? { field("csrf") }

        func field(_ name: String) -> String? {
            guard let range = body.range(of: "name=\"\(name)\" value=\"") else { return nil }
            return String(body[range.upperBound...].prefix { $0 != "\"" })
        }

        /// How often `text` occurs.
        func count(_ text: String) -> Int { body.components(separatedBy: text).count - 1 }
    }

    func get(_ uri: String, headers extra: HTTPFields = [:]) async throws -> Page {
        try await send(.get, uri, headers: extra)
    }

    /// A form POST (`application/x-www-form-urlencoded`).
    func post(_ uri: String, form: [(String, String)], headers extra: HTTPFields = [:]) async throws -> Page {
        var headers = extra
        headers[.contentType] = "application/x-www-form-urlencoded"
        let body = form.map { "\(Self.escape($0.0))=\(Self.escape($0.1))" }.joined(separator: "&")
        return try await send(.post, uri, headers: headers, body: body)
    }

    /// A `multipart/form-data` POST, as a browser sends a form with a file input: the fields,
    /// then each file (an empty file input is a part with an empty name and no bytes).
    func post(
        _ uri: String, multipart fields: [(String, String)], files: [(name: String, filename: String, type: String, bytes: Data)],
        headers extra: HTTPFields = [:]
    ) async throws -> Page {
        let boundary = "----attest-test-\(UUID().uuidString.prefix(8))"
        var body = Data()
        for (name, value) in fields {
            body.append(Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"\r\n\r\n\(value)\r\n".utf8))
        }
        for file in files {
            body.append(
                Data(
                    "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(file.name)\"; filename=\"\(file.filename)\"\r\nContent-Type: \(file.type)\r\n\r\n"
                        .utf8))
            body.append(file.bytes)
            body.append(Data("\r\n".utf8))
        }
        body.append(Data("--\(boundary)--\r\n".utf8))
        var headers = extra
        headers[.contentType] = "multipart/form-data; boundary=\(boundary)"
        return try await send(method: .post, uri, headers: headers, bytes: ByteBuffer(bytes: body))
    }

    func send(_ method: HTTPRequest.Method, _ uri: String, headers extra: HTTPFields = [:], body: String? = nil) async throws -> Page {
        try await send(method: method, uri, headers: extra, bytes: body.map { ByteBuffer(string: $0) })
    }

    func send(method: HTTPRequest.Method, _ uri: String, headers extra: HTTPFields = [:], bytes body: ByteBuffer?) async throws -> Page {
        var headers = extra
        let jar = cookies.withLock { $0 }
        if !jar.isEmpty { headers[.cookie] = jar.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "; ") }
        if let acceptLanguage, headers[.acceptLanguage] == nil { headers[.acceptLanguage] = acceptLanguage }
        let response = try await client.execute(uri: uri, method: method, headers: headers, body: body)
        let page = Page(
            status: Int(response.status.code), headers: response.headers, body: String(buffer: response.body),
            bytes: Data(buffer: response.body))
        for line in page.setCookies {
            let pair = line.split(separator: ";", maxSplits: 1)[0].split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                .map(String.init)
            guard pair.count == 2 else { continue }
            cookies.withLock { jar in
                if line.contains("Max-Age=0") { jar.removeValue(forKey: pair[0]) } else { jar[pair[0]] = pair[1] }
            }
        }
        return page
    }

    func cookie(_ name: String) -> String? { cookies.withLock { $0[name] } }

    static func escape(_ text: String) -> String {
        text.addingPercentEncoding(
            withAllowedCharacters: CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")) ?? ""
    }

    /// Signs in through the demo sign-in page (a server with `demoSignIn`).
    func demoSignIn(campus: String, email: String) async throws {
        let page = try await get("/c/\(campus)/signin")
        let csrf = try #require(page.csrf)
        let done = try await post("/c/\(campus)/signin/demo", form: [("csrf", csrf), ("email", email)])
        #expect(done.status == 303)
    }
}

/// The questionnaire the web tests answer: every kind of question.
enum WebSurvey {
    static let draft = QuestionnaireRules.Draft(
        title: "Daily check", titleTranslations: ["es": "Control diario"],
        questions: [
            Question(id: "fever", kind: .boolean, prompt: "Fever?", translations: ["es": "¿Fiebre?"], symptom: true),
            Question(id: "cough", kind: .boolean, prompt: "Cough?", translations: ["es": "¿Tos?"], symptom: true),
            Question(
                id: "temperature", kind: .number, required: false, prompt: "Temperature", translations: ["es": "Temperatura"], min: 34,
                max: 43, unit: "°C"),
            Question(
                id: "where_today", kind: .choice, prompt: "Where are you today?", translations: ["es": "¿Dónde está hoy?"],
                options: ["on_campus", "remote"]),
            Question(
                id: "notes", kind: .text, required: false, prompt: "Anything else?", translations: ["es": "¿Algo más?"], maxLength: 200),
        ])

    /// Good answers as the form sends them.
    static let healthy: [(String, String)] = [
        ("answers.fever", "no"), ("answers.cough", "no"), ("answers.temperature", "36.6"), ("answers.where_today", "on_campus"),
        ("answers.notes", ""),
    ]
}
