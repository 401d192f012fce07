import AttestFoundation
import AttestPlugins
import AttestPostgres
import AttestServer
import Foundation
import HTTPTypes
import Hummingbird
import Identity
import Surveys
import Tenancy

/// `POST /v1/campuses/{campus}/attestations`: today's answers in, the badge out.
struct AttestationRoutes: Sendable {
    let services: AttestServices

    struct Badge: Codable {
        var color: String
        var reason: String
        var validUntil: String
    }

    struct AttestationBody: ResponseEncodable {
        var id: String
        var date: String
        var submittedAt: String
        var onTime: Bool
        var surveyVersion: Int
        var badge: Badge

        init(id: String, date: String, submittedAt: String, onTime: Bool, surveyVersion: Int, badge: Badge) {
            (self.id, self.date, self.submittedAt, self.onTime, self.surveyVersion, self.badge) = (
                id, date, submittedAt, onTime, surveyVersion, badge
            )
        }

        init(_ attestation: Attestation) {
            id = attestation.id.lowercasedText
            date = attestation.date.description
            submittedAt = PostgresDate.timestamp(attestation.submittedAt)
            onTime = attestation.onTime
            surveyVersion = attestation.surveyVersion
            badge = Badge(
                color: attestation.color.rawValue, reason: attestation.reason, validUntil: PostgresDate.timestamp(attestation.validUntil))
        }

        /// The same JSON `encode(to:)` gives, written directly: the 201 of every submission.
        var json: JSONBytes {
            var json = JSONBytes(capacity: 256 + badge.reason.utf8.count)
            json.literal(#"{"id":"#)
            json.string(id)
            json.literal(#","date":"#)
            json.string(date)
            json.literal(#","submittedAt":"#)
            json.string(submittedAt)
            json.literal(#","onTime":"#)
            json.bool(onTime)
            json.literal(#","surveyVersion":"#)
            json.integer(surveyVersion)
            json.literal(#","badge":{"color":"#)
            json.string(badge.color)
            json.literal(#","reason":"#)
            json.string(badge.reason)
            json.literal(#","validUntil":"#)
            json.string(badge.validUntil)
            json.literal("}}")
            return json
        }

        /// A 201 with this body.
        func created(replayed: Bool) -> Response {
            var headers: HTTPFields = [.contentType: "application/json; charset=utf-8"]
            if replayed { headers[HTTPField.Name("Idempotent-Replayed")!] = "true" }
            return Response(status: .created, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: json.bytes)))
        }
    }

    /// One past attestation in the member's history; `answers` is null once purged.
    struct HistoryItem: Encodable {
        var attestation: AttestationBody
        var answers: SurveyAnswers?

        func encode(to encoder: any Encoder) throws {
            try attestation.encode(to: encoder)
            var container = encoder.container(keyedBy: AnswersKey.self)
            try container.encode(answers, forKey: .answers)
        }

        enum AnswersKey: String, CodingKey { case answers }
    }

    struct HistoryPage: ResponseEncodable {
        var items: [HistoryItem]
        /// Pass as `cursor` for the next (older) page; null on the last page.
        var nextCursor: String?

        enum CodingKeys: String, CodingKey { case items, nextCursor }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(items, forKey: .items)
            try container.encode(nextCursor, forKey: .nextCursor)  // null, not absent, on the last page
        }
    }

    /// The submission authenticates itself (as `AuthenticationMiddleware` does, with the same
    /// answers), so that the member's session and past are one read.
    func register(campus: RouterGroup<AttestRequestContext>, signedIn: RouterGroup<AttestRequestContext>) {
        let bearer = BearerAuthentication(services: services)
        campus.post("attestations") { request, context -> Response in
            try await submit(request, context, bearer: bearer)
        }
        signedIn.get("me/attestations") { request, context -> HistoryPage in
            try await history(request, context)
        }
    }

    /// `GET …/me/attestations?limit=&cursor=`: newest first; the cursor is the last date seen.
    private func history(_ request: Request, _ context: AttestRequestContext) async throws -> HistoryPage {
        let campus = try context.requireCampus()
        let user = try context.requireSession().user
        let (limit, before) = try QueryParameters.page(request) { LocalDate($0) }
        let page = try await services.attestations.page(campus: campus.id, user: user.id, before: before, limit: limit)
        return HistoryPage(
            items: page.items.map { HistoryItem(attestation: AttestationBody($0.attestation), answers: $0.answers) },
            nextCursor: page.next?.description)
    }

    private func submit(_ request: Request, _ context: AttestRequestContext, bearer: BearerAuthentication) async throws -> Response {
        let campus = try context.requireCampus()
        if let visit = try await bearer.guest(request, context) { return try await submitGuest(visit, request, context) }
        let now = services.clock()
        let submitter = try await bearer.authenticate(
            request, context,
            kept: { services.sessions.cached(campus: campus.id, token: $0).map(AttestationService.Submitter.init(kept:)) },
            read: { try await services.attestations.submitter(campus: campus, token: $0, at: now) })
        let key = try idempotencyKey(request)
        let (version, raw) = try await body(request, context)
        let outcome = try await services.attestations.submit(
            campus: campus, as: submitter, surveyVersion: version, answers: raw, idempotencyKey: key, at: now)
        switch outcome {
        case .created(let attestation):
            let shown = await services.attestations.shown(attestation, health: submitter.session.user.health, campus: campus, at: now)
            return AttestationBody(shown).created(replayed: false)
        case .replayed(let attestation):
            let shown = await services.attestations.shown(attestation, health: submitter.session.user.health, campus: campus, at: now)
            return AttestationBody(shown).created(replayed: true)
        case .keyReused:
            throw Problem(
                .unprocessableContent, slug: "idempotency-key-reused", title: "Idempotency-Key used with another body",
                detail: "This Idempotency-Key was sent before with other answers, which were stored. Send a new key for a new submission, "
                    + "or the same body to read back the stored one.",
                errors: [
                    .init(
                        field: "Idempotency-Key", message: "was used before with another body: use a new key (a UUID) for each submission")
                ])
        case .alreadySubmitted(let date):
            throw Problem(
                .conflict, slug: "already-submitted", title: "Already submitted today",
                detail: "You already submitted the attestation for \(date) (\(campus.timeZone)). "
                    + "The next one opens at \(campus.describeNextWindow(after: now)).")
        }
    }

    /// A submission's body: `surveyVersion` and `answers`, each problem named.
    private func body(_ request: Request, _ context: AttestRequestContext) async throws -> (Int, [String: JSONValue]) {
        var reader = ObjectReader(
            try await request.jsonObject(context: context), fields: ["surveyVersion", "answers"],
            unknown: "is not a field of an attestation")
        let version = reader.wholeNumber(
            "surveyVersion", in: 1...999_999_999, required: "the version GET …/survey returned",
            wrong: "must be an integer from 1 to 999999999: the version GET …/survey returned")
        let raw = reader.value(
            "answers", required: "an object of answers by question id", wrong: "must be an object of answers by question id"
        ) {
            if case .object(let object) = $0 { object } else { nil }
        }
        try reader.finish()
        guard let version, let raw else { throw Problem.validation(reader.problems) }
        return (version, raw)
    }

    /// A guest's answers (DESIGN §12): the guests' questionnaire, once a visit; the 201 has the
    /// shape of a member's, its `id` the visit's.
    private func submitGuest(_ visit: GuestVisit, _ request: Request, _ context: AttestRequestContext) async throws -> Response {
        let campus = try context.requireCampus()
        _ = try idempotencyKey(request)
        let (version, raw) = try await body(request, context)
        let now = services.clock()
        guard let answered = try await GuestHTTP.submit(visit, campus: campus, surveyVersion: version, answers: raw, services: services),
            let color = answered.color, let validUntil = answered.validUntil
        else {
            throw Problem(
                .conflict, slug: "already-submitted", title: "Already submitted today",
                detail: "You already answered the guest survey for this visit. Show your badge: GET …/me/badge.")
        }
        return AttestationBody(
            id: visit.id.lowercasedText, date: visit.date.description, submittedAt: PostgresDate.timestamp(now), onTime: true,
            surveyVersion: version,
            badge: Badge(color: color.rawValue, reason: answered.reason ?? "", validUntil: PostgresDate.timestamp(validUntil))
        ).created(replayed: false)
    }

    /// `Idempotency-Key`: optional, 1–200 visible ASCII characters.
    private func idempotencyKey(_ request: Request) throws -> String? {
        guard let key = request.headers[HTTPField.Name("Idempotency-Key")!] else { return nil }
        guard (1...200).contains(key.utf8.count), key.utf8.allSatisfy({ $0 > 32 && $0 < 127 }) else {
            throw Problem.validation([.init(field: "Idempotency-Key", message: "must be 1 to 200 visible ASCII characters, such as a UUID")]
            )
        }
        return key
    }
}
