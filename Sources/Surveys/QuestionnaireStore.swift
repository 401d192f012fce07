import AttestPlugins
import AttestPostgres
import Foundation
import Tenancy

/// Versioned questionnaires. Publishing makes a new version the active one; old versions
/// stay, and every attestation names the version it answered.
public struct QuestionnaireStore: Sendable {
    let client: PostgresClient

    public init(client: PostgresClient) { self.client = client }

    /// Whom a questionnaire asks: the campus's members, or its guests (DESIGN §12).
    public enum Audience: String, Sendable {
        case member, guest
    }

    /// Publishes a checked draft as the next version and records it in the audit log. Versions
    /// are numbered across the members' and the guests' questionnaires.
    public func publish(
        campus: Campus, draft: QuestionnaireRules.Draft, actor: String, audience: Audience = .member
    ) async throws -> Questionnaire {
        for attempt in 1...3 {
            do {
                return try await client.withTransaction(campus: campus.id.rawValue) { connection in
                    let next = try await connection.query(
                        "SELECT coalesce(max(version), 0) + 1 AS next FROM questionnaires WHERE campus_id = \(campus.id)")
                    let version: Int = try next[0].decode("next")
                    let questionnaire = Questionnaire(
                        version: version, title: draft.title, titleTranslations: draft.titleTranslations ?? [:], questions: draft.questions)
                    try await connection.query(
                        """
                        INSERT INTO questionnaires (campus_id, version, definition, published_by, audience)
                        VALUES (\(campus.id), \(version), \(try PostgresJSON(encoding: questionnaire)), \(actor), \(audience.rawValue))
                        """)
                    try await AuditLog.record(
                        connection, campus: campus.id, actor: actor, action: "survey.publish", target: "version \(version)",
                        details: ["questions": "\(draft.questions.count)", "audience": audience.rawValue])
                    return questionnaire
                }
            } catch let error as PostgresError where error.isUniqueViolation && attempt < 3 {
                continue  // another publish took this version number at the same moment
            }
        }
        throw PostgresError(code: .server, message: "could not allocate a questionnaire version")
    }

    /// The members' active (latest) version, or nil when none was published.
    public func active(campus: CampusID) async throws -> Questionnaire? {
        let rows = try await client.query(
            """
            SELECT definition FROM questionnaires WHERE campus_id = \(campus) AND audience = 'member'
            ORDER BY version DESC LIMIT 1
            """, campus: campus.rawValue)
        return try rows.first.map { try $0.decode("definition", as: PostgresJSON.self).decode(as: Questionnaire.self) }
    }

    /// What guests answer: the latest guests' questionnaire, else the members' active one.
    public func guests(campus: CampusID) async throws -> Questionnaire? {
        let rows = try await client.query(
            """
            SELECT definition FROM questionnaires WHERE campus_id = \(campus)
            ORDER BY audience = 'guest' DESC, version DESC LIMIT 1
            """, campus: campus.rawValue)
        return try rows.first.map { try $0.decode("definition", as: PostgresJSON.self).decode(as: Questionnaire.self) }
    }

    public func version(_ version: Int, campus: CampusID) async throws -> Questionnaire? {
        let rows = try await client.query(
            "SELECT definition FROM questionnaires WHERE campus_id = \(campus) AND version = \(version)", campus: campus.rawValue)
        return try rows.first.map { try $0.decode("definition", as: PostgresJSON.self).decode(as: Questionnaire.self) }
    }
}

extension Questionnaire {
    /// The questionnaire with prompts in the best language `Accept-Language` asks for that it
    /// has (`es-MX` falls back to `es`), and the language chosen (nil: the original).
    public func localized(acceptLanguage header: String?) -> (questionnaire: Questionnaire, language: String?) {
        let available = Set(questions.flatMap { $0.translations.keys }).union(titleTranslations.keys)
        guard let header, let language = Self.bestLanguage(header, available: available) else { return (self, nil) }
        var copy = self
        copy.title = titleTranslations[language] ?? title
        copy.titleTranslations = [:]
        copy.questions = questions.map { question in
            var translated = question
            translated.prompt = question.translations[language] ?? question.prompt
            translated.translations = [:]
            return translated
        }
        return (copy, language)
    }

    public static func bestLanguage(_ header: String, available: Set<String>) -> String? {
        var ranked: [(tag: String, weight: Double, order: Int)] = []
        for (order, part) in header.split(separator: ",").enumerated() {
            let pieces = part.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
            guard let tag = pieces.first, !tag.isEmpty, tag != "*" else { continue }
            var weight = 1.0
            for parameter in pieces.dropFirst() where parameter.hasPrefix("q=") { weight = Double(parameter.dropFirst(2)) ?? 0 }
            if weight > 0 { ranked.append((tag, weight, order)) }
        }
        let lowered = Dictionary(available.map { ($0.lowercased(), $0) }, uniquingKeysWith: { first, _ in first })
        for candidate in ranked.sorted(by: { $0.weight != $1.weight ? $0.weight > $1.weight : $0.order < $1.order }) {
            let tag = candidate.tag.lowercased()
            if let exact = lowered[tag] { return exact }
            if let primary = tag.split(separator: "-").first, let match = lowered[String(primary)] { return match }
        }
        return nil
    }
}
