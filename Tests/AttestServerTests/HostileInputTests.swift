import AttestPlugins
import AttestPluginsTesting
import AttestTestSupport
import Foundation
import HTTPTypes
import Tenancy
import Testing

@testable import AttestAPI
@testable import AttestServer
@testable import AttestWeb
@testable import Surveys

/// DESIGN §9, bad input, tried at random rather than case by case: malformed and hostile
/// requests to every operation of the API document, made by a seeded generator so a failure
/// can be replayed (`ATTEST_HOSTILE_SEED=n swift test --filter HostileInputTests`).
@Suite("Hostile input")
struct HostileInputTests {
    typealias Generator = SeededGenerator

    /// The operations come from the document, so a new route shifts what a seed picks; the mix
    /// goes on past its 1,500 requests until it has reached every status it must.
    static let seed = ProcessInfo.processInfo.environment["ATTEST_HOSTILE_SEED"].flatMap { UInt64($0) } ?? 20_261_128

    /// Every kind of question, so every kind of answer check is reached.
    static let draft = QuestionnaireRules.Draft(
        title: "Check",
        questions: [
            Question(id: "fever", kind: .boolean, prompt: "Fever?", symptom: true),
            Question(id: "cough", kind: .boolean, prompt: "Cough?", symptom: true),
            Question(id: "temperature", kind: .number, required: false, prompt: "Temperature", min: 34, max: 43, unit: "°C"),
            Question(id: "mood", kind: .choice, prompt: "How are you?", options: ["ok", "tired", "unwell"]),
            Question(id: "note", kind: .text, required: false, prompt: "Anything else?", maxLength: 20),
        ])

    /// Query values: malformed, out of range, or valid ones in the wrong place.
    static let queryValues = [
        "", "%20", "%00", "%FF", "%C3%28", "..%2F..", "%E2%80%AE", "-1", "0", "101", "99999999999999999999999", "1e309",
        "NaN", "Infinity", "-0", "null", "%5B%5D", "%7B%7D", "true", "2026-02-30", "2026-13-01", "0000-01-01",
        "9999-12-31", "2026-1-1", "%2B2026-11-20", "2026-11-20T00:00:00Z", "%202026-11-20", "2026-11-20%00", "red%00",
        "RED", "gray", "green", "yellow", "red", "2026-11-20", "2025-11-01", "2019-01-01", "40.7", "-73.9", "91", "-181",
        "5", "%25", "1%2C2", "%C3%A9", String(repeating: "x", count: 3000),
    ]

    /// `{campus}` in a path: this campus, the other one, and slugs that are not one.
    static let campusSegments = [
        "north", "north", "north", "north", "north", "north", "north", "north", "south", "NORTH", "nope", "%00", "..", "%2e%2e", "n%C3%A9",
        String(repeating: "n", count: 300),
    ]

    /// Field names worth colliding with, and junk.
    static let keys = [
        "surveyVersion", "answers", "token", "idToken", "fever", "cough", "temperature", "mood", "note", "", "__proto__", "FEVER", "fever ",
        "x",
    ]

    /// A JSON value of any shape, at most `depth` deep.
    static func anyJSON(_ g: inout Generator, depth: Int) -> String {
        switch Int.random(in: 0..<(depth > 0 ? 10 : 7), using: &g) {
        case 0: return "null"
        case 1: return g.pick(["true", "false"])
        case 2:
            return g.pick([
                "0", "-0", "1", "-1", "1.5", "1e308", "-1e308", "1e-320", "123456789012345678901234567890", "36.6", "43.01", "33.99",
            ])
        case 3: return g.pick([#""""#, #""ok""#, #""tired""#, #""\u0000""#, #""\ud83d\ude00""#, #""é""#, #""\"\\""#, #""2026-11-20""#])
        case 4: return "\"" + String(repeating: "x", count: g.pick([21, 200, 5000])) + "\""
        case 5: return "\"" + g.pick(keys) + "\""
        case 6: return g.pick(["[]", "{}"])
        case 7, 8:
            let members = (0..<Int.random(in: 1...4, using: &g)).map { _ in "\"\(g.pick(keys))\": \(anyJSON(&g, depth: depth - 1))" }
            return "{" + members.joined(separator: ", ") + "}"
        default:
            return "[" + (0..<Int.random(in: 1...3, using: &g)).map { _ in anyJSON(&g, depth: depth - 1) }.joined(separator: ", ") + "]"
        }
    }

    /// Text that is not one JSON value, or one a parser must refuse.
    static let brokenJSON = [
        "", " ", "{", "}", "{\"a\":", "[", String(repeating: "[", count: 100) + String(repeating: "]", count: 100), "{}}", "nul", "tru",
        "{'a': 1}", "{\"a\" 1}", "{\"a\": 1,}", "[1,]", "01", "1.", ".5", "+1", "0x10", "1e", "\"\\x\"", "\"\\ud800\"", "\"\u{1}\"",
        "{\"surveyVersion\": 1, \"surveyVersion\": 1, \"answers\": {}}", "{\"a\": 1} {\"a\": 1}", "\u{FEFF}{}", "1e400",
        String(repeating: "{\"a\":", count: 80) + "1" + String(repeating: "}", count: 80),
        "{\"surveyVersion\": 1, \"answers\": {\"fever\": false, \"cough\": false, \"mood\": \"ok\"}",
    ]

    /// A submission with at least one thing wrong with it, so none may be stored.
    static func flawedSubmission(_ g: inout Generator) -> String {
        var answers: [(String, String)] = [("fever", "false"), ("cough", "false"), ("mood", "\"ok\"")]
        if g.chance(0.5) { answers.append(("temperature", "36.6")) }
        if g.chance(0.5) { answers.append(("note", "\"fine\"")) }
        var version = "1"
        var extra: [(String, String)] = []
        for _ in 0..<Int.random(in: 1...3, using: &g) {
            switch Int.random(in: 0..<9, using: &g) {
            case 0:  // an answer of the wrong type
                let wrong: [String: [String]] = [
                    "fever": [#""yes""#, "1", "0", "[]", "{}", #""true""#], "cough": [#""no""#, "[false]", "1.5"],
                    "temperature": [#""36.6""#, "true", "[]", "{}"], "mood": [#""OK""#, #""""#, "1", "true", "[]", #""ok ""#],
                    "note": ["1", "true", "[]", "{}", "\"" + String(repeating: "x", count: 21) + "\""],
                ]
                let id = g.pick(Array(wrong.keys).sorted())
                answers.removeAll { $0.0 == id }
                answers.append((id, g.pick(wrong[id]!)))
            case 1:  // a number out of range
                answers.removeAll { $0.0 == "temperature" }
                answers.append(("temperature", g.pick(["33.99", "43.01", "-1e308", "1e308", "1e-320", "-40"])))
            case 2:  // a question the survey does not have
                answers.append((g.pick(["", "FEVER", "fever ", "__proto__", "x", String(repeating: "q", count: 300)]), "true"))
            case 3:  // a required answer missing
                let id = g.pick(["fever", "cough", "mood"])
                answers.removeAll { $0.0 == id }
            case 4: version = g.pick([#""1""#, "1.5", "-1", "0", "2", "2", "2", "1e20", "null", "true", "[]"])
            case 5: extra.append((g.pick(["extra", "surveyversion", "id", "badge", "color"]), anyJSON(&g, depth: 2)))
            case 6: return "{\"surveyVersion\": \(version), \"answers\": \(g.pick(["[]", "\"fever\"", "null", "1", "[{}]"]))}"
            case 7: return g.chance(0.5) ? "{\"surveyVersion\": \(version)}" : "{\"answers\": {}}"
            default: return g.chance(0.5) ? anyJSON(&g, depth: 4) : g.pick(brokenJSON)
            }
        }
        let object = answers.map { "\"\($0.0)\": \($0.1)" }.joined(separator: ", ")
        let top = [("surveyVersion", version), ("answers", "{" + object + "}")] + extra
        return "{" + top.map { "\"\($0.0)\": \($0.1)" }.joined(separator: ", ") + "}"
    }

    /// Any body for a route that takes one: junk, a valid shape with odd values, or too large.
    static func body(for template: String, _ g: inout Generator) -> String {
        if g.chance(0.05) { return "{\"token\": \"" + String(repeating: "x", count: 70_000) + "\"}" }  // past the 64 KiB limit
        if template.hasSuffix("/attestations") { return flawedSubmission(&g) }
        // A valid start now and then: the second of a kind while one is open is a 409.
        if template.hasSuffix("/me/episodes"), g.chance(0.3) { return #"{"kind": "headache", "severity": 3}"# }
        if g.chance(0.3) { return g.chance(0.5) ? anyJSON(&g, depth: 4) : g.pick(brokenJSON) }
        let field = template.hasSuffix("/sessions") ? "idToken" : "token"
        let value = g.pick([
            "null", "1", "[]", "{}", #""""#, #""a.b.c""#, #""a.b""#, #""....""#, #""eyJhbGciOiJub25lIn0.e30.""#,
            #""eyJhbGciOiJFUzI1NiJ9.eyJ9.c2ln""#, "\"" + String(repeating: "A", count: 5000) + "\"", #""\u0000.\u0000.\u0000""#,
        ])
        return g.chance(0.2) ? "{\"\(field)\": \(value), \"\(g.pick(keys))\": 1}" : "{\"\(field)\": \(value)}"
    }

    @Test func randomMalformedRequestsGetA4xxProblemAndStoreNothing() async throws {
        let clock = try TestClock("2026-11-20T14:00:00Z")  // 09:00 in New York, before the deadline
        let server = try await TestServer.make(clock: clock.read)
        let north = try await server.campus("north")
        _ = try await QuestionnaireStore(client: server.pool).publish(campus: north, draft: Self.draft, actor: "test")
        let south = try await server.campus("south")
        let (_, member) = try await server.user("member@example.edu", at: north)
        let (_, everyRole) = try await server.user("all@example.edu", at: north, roles: [.screener, .healthOfficer, .admin])
        let (_, southern) = try await server.user("member@example.edu", at: south, roles: [.screener, .healthOfficer, .admin])

        // Every operation of the document but sign-out, which would end the sessions used here.
        var operations: [(method: HTTPRequest.Method, template: String, parameters: [String])] = []
        for path in OpenAPIDocument.value["paths"]?.members ?? [] {
            let shared = QueryStringTests.items(path.value["parameters"])
            for (name, method) in [("get", HTTPRequest.Method.get), ("post", .post)] {
                guard let operation = path.value[name] else { continue }
                let query = (shared + QueryStringTests.items(operation["parameters"]))
                    .filter { $0["in"] == "query" }.compactMap { $0["name"]?.stringValue }
                operations.append((method, path.key, query))
            }
        }
        #expect(operations.count >= 15, "\(operations.map(\.template))")

        // Bodies are where most can go wrong: the operations that take one come up three times as often.
        let posts = operations.filter { $0.method == .post }
        // Submissions (the one write of health data) more often again: as many as when the document had fewer routes.
        let submissions = posts.filter { $0.template.hasSuffix("/attestations") }
        let found = operations + posts + posts + submissions + submissions + submissions, seed = Self.seed, requests = 1_500
        try await server.run { api in
            var g = Generator(seed: seed)
            var statuses: [Int: Int] = [:]
            // The mix must reach past authentication into validation, not only the 401s and 404s:
            // past 1,500 requests it goes on (to 4,000 at most) until it has reached every one of
            // these, so a new route that shifts what the seed picks does not starve one.
            let wanted = [200, 400, 401, 403, 404, 409, 413, 415, 422]
            for index in 0..<4_000 {
                if index >= requests, wanted.allSatisfy({ statuses[$0, default: 0] > 0 }) { break }
                let (method, template, parameters) = g.pick(found)
                var path = template.replacingOccurrences(of: "{campus}", with: g.pick(Self.campusSegments))
                    .replacingOccurrences(
                        of: "{id}", with: g.pick([UUID().uuidString, "42", "%7Bid%7D", "00000000-0000-0000-0000-000000000000"])
                    )
                    .replacingOccurrences(
                        of: "{token}", with: g.pick([String(repeating: "A", count: 43), "x", "%00", String(repeating: "-", count: 300)]))
                var pairs: [String] = []
                for name in parameters where g.chance(0.7) {
                    let value = g.chance(0.5) ? (QueryStringTests.samples[name] ?? "") : g.pick(Self.queryValues)
                    pairs.append("\(name)=\(value)")
                }
                if g.chance(0.1) { pairs.append("\(g.pick(["colour", "x", "", "from"]))=\(g.pick(Self.queryValues))") }
                if !pairs.isEmpty { path += "?" + pairs.joined(separator: "&") }
                var headers: HTTPFields = [:]
                var token: String? = g.pick([member, everyRole, everyRole, southern, nil])
                if g.chance(0.1) {
                    token = nil
                    headers[.authorization] = g.pick([
                        "Bearer", "Bearer ", "Basic bWU6eW91", "bearer " + member, "Bearer " + member + " x",
                        "Bearer " + String(repeating: "A", count: 43), "Bearer \(member)\(member)",
                    ])
                }
                if template.hasSuffix("/attestations"), method == .post, g.chance(0.2) {
                    headers[HTTPField.Name("Idempotency-Key")!] = g.pick(["", " ", String(repeating: "k", count: 201), "é", "key-1"])
                }
                var json: String?
                var contentType = "application/json"
                if method == .post {
                    json = Self.body(for: template, &g)
                    if g.chance(0.15) {
                        contentType = g.pick([
                            "text/plain", "application/json; charset=utf-16", "application/x-www-form-urlencoded", "application/jsonx",
                            "json",
                        ])
                    }
                }
                let what = "seed \(seed), request \(index): \(method) \(path.prefix(300)) \(json.map { String($0.prefix(300)) } ?? "")"
                let reply = try await api.send(
                    method, path, template: template, token: token, json: json, contentType: contentType, headers: headers)
                statuses[reply.status, default: 0] += 1
                #expect(reply.status < 500, "\(what) → \(reply.status) \(reply.body.prefix(500))")
                if reply.status >= 400 {
                    #expect(reply.headers[.contentType]?.hasPrefix("application/problem+json") == true, "\(what) → \(reply.headers)")
                    let problem = reply.json
                    #expect(problem["status"] as? Int == reply.status, "\(what) → \(reply.body.prefix(500))")
                    #expect(
                        !(problem["detail"] as? String ?? "").isEmpty, "\(what) → a problem without a detail: \(reply.body.prefix(500))")
                    for error in problem["errors"] as? [[String: Any]] ?? [] {
                        #expect(
                            !(error["field"] as? String ?? "").isEmpty && !(error["message"] as? String ?? "").isEmpty, "\(what) → \(error)"
                        )
                    }
                }
            }
            for status in wanted {
                #expect(statuses[status, default: 0] > 0, "seed \(seed): no \(status) among \(statuses.sorted { $0.key < $1.key })")
            }
            // Every submission had something wrong with it: nothing of one may have been stored.
            for campus in [north, south] {
                let rows = try await server.pool.query(
                    """
                    SELECT (SELECT count(*) FROM attestations) AS attestations, (SELECT count(*) FROM daily_stats) AS stats,
                           (SELECT count(*) FROM daily_answer_counts) AS answers, (SELECT count(*) FROM notification_outbox) AS outbox
                    """, campus: campus.id.rawValue)
                for column in ["attestations", "stats", "answers", "outbox"] {
                    #expect(try rows[0].decode(column, as: Int.self) == 0, "seed \(seed): \(column) stored at \(campus.slug)")
                }
            }
        }
    }
}
