import AttestPlugins
import AttestPostgres
import AttestServer
import Foundation
import Hummingbird
import Identity
import Records
import Tenancy

/// Health records (DESIGN §11): a laboratory's results in (`POST …/lab/results` with a `lab`
/// token), the health officers' queue of unmatched results and their isolations and
/// quarantines (`…/health/…`), and the member's own record (`GET …/me/records`).
struct RecordsRoutes: Sendable {
    let services: AttestServices

    /// The largest delivery: a Bundle of `FHIRObservations.maxEntries` observations.
    static let bodyLimit = 8 << 20

    struct ReceiptBody: ResponseEncodable {
        var received: Int
        var matched: Int
        var unmatched: Int
        var corrected: Int
        var statusesChanged: Int
    }

    struct UnmatchedItem: Encodable {
        var id: String
        var specimenId: String
        var subject: String
        var testCode: String
        var result: String
        var collectedAt: String
        var resultedAt: String
        var receivedAt: String
    }

    struct UnmatchedList: ResponseEncodable {
        var items: [UnmatchedItem]
    }

    struct RestrictionItem: ResponseEncodable {
        var id: String
        var kind: String
        var startsOn: String
        var until: String
        var fromResult: Bool
        var email: String
        var name: String

        init(_ restriction: HealthRecords.Restriction) {
            id = restriction.id.lowercasedText
            kind = restriction.kind.rawValue
            startsOn = restriction.startsOn.description
            until = restriction.until.description
            fromResult = restriction.fromResult
            email = restriction.email
            name = restriction.name
        }
    }

    struct RestrictionList: ResponseEncodable {
        var items: [RestrictionItem]
    }

    struct MemberTest: Encodable {
        var id: String
        var testCode: String
        var result: String
        var collectedAt: String
        var resultedAt: String
    }

    struct MemberRestriction: Encodable {
        var kind: String
        var until: String
    }

    struct MemberExemption: Encodable {
        var kind: String
        var expires: String
    }

    struct MemberRecordBody: ResponseEncodable {
        var tests: [MemberTest]
        /// The isolation or quarantine in force today; null when none.
        var restriction: MemberRestriction?
        /// The approved exemption in force today; null when none.
        var exemption: MemberExemption?
        /// The doses the member's cards gave, and the vaccination they make (null: none).
        var doses: [KeptDoseItem]
        var vaccination: VaccinationBody?

        enum CodingKeys: String, CodingKey { case tests, restriction, exemption, doses, vaccination }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(tests, forKey: .tests)
            try container.encode(restriction, forKey: .restriction)  // null, not absent
            try container.encode(exemption, forKey: .exemption)
            try container.encode(doses, forKey: .doses)
            try container.encode(vaccination, forKey: .vaccination)
        }
    }

    struct KeptDoseItem: Encodable {
        var cvx: String
        var date: String
        var issuer: String
        var verifiedAt: String
    }

    static func words(_ detected: Bool) -> String { detected ? "detected" : "not detected" }

    struct ExemptionItem: ResponseEncodable {
        var id: String
        var kind: String
        var note: String
        var status: String
        var requestedAt: String
        var expires: String?
        var reason: String
        var decidedAt: String?
        /// Whose: in the health officers' list only.
        var email: String?
        var name: String?

        init(_ exemption: HealthRecords.Exemption, withMember: Bool) {
            id = exemption.id.lowercasedText
            kind = exemption.kind.rawValue
            note = exemption.note
            status = exemption.status.rawValue
            requestedAt = PostgresDate.timestamp(exemption.requestedAt)
            expires = exemption.expires?.description
            reason = exemption.reason
            decidedAt = exemption.decidedAt.map(PostgresDate.timestamp)
            (email, name) = withMember ? (exemption.email, exemption.name) : (nil, nil)
        }

        enum CodingKeys: String, CodingKey { case id, kind, note, status, requestedAt, expires, reason, decidedAt, email, name }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(id, forKey: .id)
            try container.encode(kind, forKey: .kind)
            try container.encode(note, forKey: .note)
            try container.encode(status, forKey: .status)
            try container.encode(requestedAt, forKey: .requestedAt)
            try container.encode(expires, forKey: .expires)  // null until approved
            try container.encode(reason, forKey: .reason)
            try container.encode(decidedAt, forKey: .decidedAt)  // null while pending
            try container.encodeIfPresent(email, forKey: .email)
            try container.encodeIfPresent(name, forKey: .name)
        }
    }

    struct ExemptionList: ResponseEncodable {
        var items: [ExemptionItem]
    }

    func register(
        campus: RouterGroup<AttestRequestContext>, signedIn: RouterGroup<AttestRequestContext>, ownData: RouterGroup<AttestRequestContext>
    ) {
        ownData.get("me/exemptions") { request, context -> Response in
            let (campus, user) = try JournalRoutes.member(context)
            let query = QueryParameters(request, accepting: [])
            guard query.problems.isEmpty else { throw Problem.validation(query.problems) }
            let items = try await services.records.exemptions(campus: campus, user: user)
            return try JournalRoutes.private(ExemptionList(items: items.map { ExemptionItem($0, withMember: false) }), request, context)
        }
        ownData.post("me/exemptions") { request, context -> Response in
            let (campus, user) = try JournalRoutes.member(context)
            var reader = ObjectReader(try await request.jsonObject(context: context), fields: ["kind", "note"])
            let kind = reader.value("kind", required: "medical, religious or other", wrong: "must be medical, religious or other") {
                value -> HealthStatus.ExemptionKind? in
                if case .string(let text) = value { HealthStatus.ExemptionKind(rawValue: text) } else { nil }
            }
            let note = reader.text("note", required: "what the health officers should know, in a few words")
            if let note, note.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty || note.count > HealthRecords.maxNote {
                reader.problem("note", "must hold 1 to \(HealthRecords.maxNote) characters")
            }
            try reader.finish()
            guard let kind, let note else { throw Problem.validation(reader.problems) }
            let made = try await services.records.requestExemption(
                campus: campus, user: user, kind: kind, note: note, actor: "user:" + (try context.requireSession().user.email),
                now: services.clock())
            var response = try JournalRoutes.private(ExemptionItem(made, withMember: false), request, context)
            response.status = .created
            return response
        }
        ownData.post("me/vaccinations") { request, context -> Response in
            let (campus, _) = try JournalRoutes.member(context)
            let session = try context.requireSession()
            let cards = try await Self.cards(request, context)
            let presented = try await services.records.presentCards(
                campus: campus, user: session.user, cards: cards, actor: "user:" + session.user.email, now: services.clock())
            var response = try JournalRoutes.private(
                PresentedBody(
                    issuers: presented.issuers, doses: presented.doses.map { DoseItem(cvx: $0.cvx, date: $0.date.description) },
                    vaccination: VaccinationBody(presented.vaccination, today: campus.localDate(at: services.clock()))),
                request, context)
            response.status = .created
            return response
        }
        let bearer = BearerAuthentication(services: services)
        campus.post("lab/results") { request, context -> Response in
            try await receive(request, context, bearer: bearer)
        }
        // The member's own health record: like the exemptions' notes, never with an operator's
        // session (the page refused one already; the route did not).
        ownData.get("me/records") { request, context -> Response in
            let (campus, user) = try JournalRoutes.member(context)
            let query = QueryParameters(request, accepting: [])
            guard query.problems.isEmpty else { throw Problem.validation(query.problems) }
            let record = try await services.records.record(campus: campus, user: user)
            let today = campus.localDate(at: services.clock())
            let body = MemberRecordBody(
                tests: record.tests.map {
                    MemberTest(
                        id: $0.id.lowercasedText, testCode: $0.code, result: Self.words($0.detected),
                        collectedAt: PostgresDate.timestamp($0.collectedAt), resultedAt: PostgresDate.timestamp($0.resultedAt))
                },
                restriction: record.status.restriction(on: today).map {
                    MemberRestriction(kind: $0.kind.rawValue, until: $0.until.description)
                },
                exemption: record.status.exemption(on: today).map {
                    MemberExemption(kind: $0.kind.rawValue, expires: $0.expires.description)
                },
                doses: record.doses.map {
                    KeptDoseItem(
                        cvx: $0.dose.cvx, date: $0.dose.date.description, issuer: $0.issuer,
                        verifiedAt: PostgresDate.timestamp($0.verifiedAt))
                },
                vaccination: VaccinationBody(record.status.vaccination, today: today))
            return try JournalRoutes.private(body, request, context)
        }
        let health = campus.group("health").add(middleware: AuthenticationMiddleware(services: services, roles: [.healthOfficer]))
        health.get("results") { request, context -> Response in
            let campus = try context.requireCampus(), session = try context.requireSession()
            let query = QueryParameters(request, accepting: ["unmatched"])
            guard query.problems.isEmpty else { throw Problem.validation(query.problems) }
            guard query["unmatched"] == "true" else {
                throw Problem.validation([
                    .init(field: "unmatched", message: "must be true: this route lists the results that matched no member")
                ])
            }
            let items = try await services.records.unmatched(campus: campus, actor: session.user.email)
            let body = UnmatchedList(
                items: items.map {
                    UnmatchedItem(
                        id: $0.id.lowercasedText, specimenId: $0.result.specimenID, subject: $0.result.subject,
                        testCode: $0.result.testCode, result: Self.words($0.result.detected),
                        collectedAt: PostgresDate.timestamp($0.result.collectedAt),
                        resultedAt: PostgresDate.timestamp($0.result.resultedAt),
                        receivedAt: PostgresDate.timestamp($0.receivedAt))
                })
            return try JournalRoutes.private(body, request, context)
        }
        health.post("results/:id/match") { request, context -> Response in
            let campus = try context.requireCampus(), session = try context.requireSession()
            let id = try Self.id(context)
            var reader = ObjectReader(try await request.jsonObject(context: context), fields: ["email"])
            let email = reader.text("email", required: "the email of the member this result is about")
            try reader.finish()
            guard let email, LabResult.email(email) != nil else {
                throw Problem.validation([.init(field: "email", message: "must be a member's email address")])
            }
            try await services.records.match(campus: campus, result: id, email: email, actor: session.user.email)
            return Response(status: .noContent, headers: [.cacheControl: "private, no-store"])
        }
        health.post("results/:id/dismiss") { request, context -> Response in
            let campus = try context.requireCampus(), session = try context.requireSession()
            try await services.records.dismiss(campus: campus, result: try Self.id(context), actor: session.user.email)
            return Response(status: .noContent, headers: [.cacheControl: "private, no-store"])
        }
        health.get("isolations") { request, context -> Response in
            let campus = try context.requireCampus(), session = try context.requireSession()
            let query = QueryParameters(request, accepting: [])
            guard query.problems.isEmpty else { throw Problem.validation(query.problems) }
            let items = try await services.records.restrictions(
                campus: campus, on: campus.localDate(at: services.clock()), actor: session.user.email)
            return try JournalRoutes.private(RestrictionList(items: items.map(RestrictionItem.init)), request, context)
        }
        health.post("isolations") { request, context -> Response in
            let campus = try context.requireCampus(), session = try context.requireSession()
            var reader = ObjectReader(try await request.jsonObject(context: context), fields: ["email", "kind", "startsOn", "until"])
            let email = reader.text("email", required: "the member's email")
            let kind = reader.value(
                "kind", required: "isolation or quarantine", wrong: "must be isolation (a case) or quarantine (a close contact)"
            ) { value -> HealthStatus.RestrictionKind? in
                if case .string(let text) = value { HealthStatus.RestrictionKind(rawValue: text) } else { nil }
            }
            let startsOn = reader.date("startsOn"), until = reader.date("until")
            try reader.finish()
            guard let email, let kind else { throw Problem.validation(reader.problems) }
            let restriction = try await services.records.start(
                campus: campus, email: email, kind: kind, startsOn: startsOn, until: until, actor: session.user.email,
                now: services.clock())
            var response = try JournalRoutes.private(RestrictionItem(restriction), request, context)
            response.status = .created
            return response
        }
        health.get("exemptions") { request, context -> Response in
            let campus = try context.requireCampus(), session = try context.requireSession()
            let query = QueryParameters(request, accepting: ["status"])
            guard query.problems.isEmpty else { throw Problem.validation(query.problems) }
            guard let status = HealthRecords.Exemption.Status(rawValue: query["status"] ?? "pending") else {
                throw Problem.validation([.init(field: "status", message: "must be pending, approved, denied or ended")])
            }
            let items = try await services.records.exemptions(campus: campus, status: status, actor: session.user.email)
            return try JournalRoutes.private(ExemptionList(items: items.map { ExemptionItem($0, withMember: true) }), request, context)
        }
        health.patch("exemptions/:id") { request, context -> Response in
            let campus = try context.requireCampus(), session = try context.requireSession()
            let id = try Self.id(context)
            var reader = ObjectReader(try await request.jsonObject(context: context), fields: ["decision", "expires", "reason"])
            let approve = reader.value("decision", required: "approved or denied", wrong: "must be approved or denied") { value -> Bool? in
                switch value {
                case .string("approved"): true
                case .string("denied"): false
                default: nil
                }
            }
            let expires = reader.date("expires")
            let reason = reader.text("reason") ?? ""
            if reason.count > HealthRecords.maxReason {
                reader.problem("reason", "must hold at most \(HealthRecords.maxReason) characters")
            }
            if approve == true, expires == nil, !reader.has("expires") {
                reader.problem("expires", "is required to approve: the last day the exemption holds")
            }
            try reader.finish()
            guard let approve else { throw Problem.validation(reader.problems) }
            try await services.records.decideExemption(
                campus: campus, id: id, approve: approve, expires: approve ? expires : nil, reason: reason, actor: session.user.email,
                now: services.clock())
            return Response(status: .noContent, headers: [.cacheControl: "private, no-store"])
        }
        health.post("isolations/:id/release") { request, context -> Response in
            let campus = try context.requireCampus(), session = try context.requireSession()
            try await services.records.release(campus: campus, id: try Self.id(context), actor: session.user.email)
            return Response(status: .noContent, headers: [.cacheControl: "private, no-store"])
        }
    }

    static func id(_ context: AttestRequestContext) throws -> UUID {
        guard let text = context.parameters.get("id"), let id = UUID(uuidString: text) else {
            throw Problem.notFound("no such record here: the id is not one this server gave")
        }
        return id
    }

    /// `POST …/lab/results`: a FHIR Observation or a Bundle of them, all or none.
    private func receive(_ request: Request, _ context: AttestRequestContext, bearer: BearerAuthentication) async throws -> Response {
        let campus = try context.requireCampus()
        let machine = try await bearer.authenticate(
            request, context, kept: { _ in nil },
            read: { try await services.machineTokens.authenticate(campus: campus.id, token: $0, role: .lab) })
        if let type = request.headers[.contentType], !Request.namesJSON(type), !Self.namesFHIRJSON(type) {
            throw Problem(
                .unsupportedMediaType, slug: "unsupported-media-type", title: "Unsupported media type",
                detail: "Send the Observation or Bundle as application/fhir+json (or application/json).")
        }
        let buffer = try await request.collectBody(context: context, limit: Self.bodyLimit)
        let parsed = buffer.withUnsafeReadableBytes { bytes in Result { () throws(JSONSyntaxError) in try JSONValue(parsing: bytes) } }
        guard case .success(let json) = parsed else {
            throw Problem(
                .badRequest, slug: "invalid-json", title: "Invalid JSON",
                detail: "The body is not valid JSON: send a FHIR R4 Observation or a Bundle of them.")
        }
        let (results, problems) = FHIRObservations.parse(
            json, zone: campus.zone, memberIDSystem: RecordsPolicy(campus: campus).memberIDSystem, now: services.clock())
        guard problems.isEmpty else { throw RecordsError.invalid(problems) }
        let receipt = try await services.records.receive(
            campus: campus, results: results, source: "lab:\(machine.name)", actor: "lab:\(machine.name)")
        return try JournalRoutes.private(
            ReceiptBody(
                received: receipt.received, matched: receipt.matched, unmatched: receipt.unmatched, corrected: receipt.corrected,
                statusesChanged: receipt.statusesChanged), request, context)
    }

    /// The largest card presentation: a file of `SmartHealthCards.maxCards` cards.
    static let cardsLimit = 256 << 10

    /// The cards' JWS of `POST …/me/vaccinations`: `{"shc": "shc:/…"}`, `{"shc": ["shc:/1/2/…", …]}`,
    /// `{"verifiableCredential": [JWS…]}`, or a `.smart-health-card` file as
    /// `application/smart-health-card`.
    static func cards(_ request: Request, _ context: AttestRequestContext) async throws -> [String] {
        if let type = request.headers[.contentType],
            type.split(separator: ";", maxSplits: 1).first.map({ $0.trimmingCharacters(in: .whitespaces).lowercased() })
                == "application/smart-health-card"
        {
            let buffer = try await request.collectBody(context: context, limit: cardsLimit)
            return try SmartHealthCards.jws(file: buffer.readableBytesView)
        }
        let object = try await request.jsonObject(context: context, limit: cardsLimit)
        var reader = ObjectReader(object, fields: ["shc", "verifiableCredential"])
        try reader.finish()
        switch (object["shc"], object["verifiableCredential"]) {
        case (.string(let text)?, nil): return [try SmartHealthCards.jws(qr: [text])]
        case (.array(let chunks)?, nil):
            let texts = chunks.compactMap { if case .string(let text) = $0 { text } else { nil } }
            guard texts.count == chunks.count, !texts.isEmpty else {
                throw Problem.validation([.init(field: "shc", message: "must be a card's QR text, or a list of its chunks' texts")])
            }
            return [try SmartHealthCards.jws(qr: texts)]
        case (nil, .some(let credentials)):
            return try SmartHealthCards.jws(credentials: credentials)
        case (nil, nil):
            throw Problem.validation([
                .init(
                    field: "shc",
                    message: "is required: a card's QR text (shc:/…), or give verifiableCredential from a .smart-health-card file")
            ])
        default:
            throw Problem.validation([
                .init(
                    field: "shc",
                    message: "must be a card's QR text (shc:/…) or a list of its chunks; give either shc or verifiableCredential")
            ])
        }
    }

    struct DoseItem: Encodable {
        var cvx: String
        var date: String
    }

    struct VaccinationBody: Encodable {
        var doses: Int
        var lastDose: String
        /// The day the series was completed; null while incomplete.
        var completed: String?
        /// Completed at least 14 days ago.
        var fullyVaccinated: Bool

        init?(_ vaccination: HealthStatus.Vaccination?, today: LocalDate) {
            guard let vaccination else { return nil }
            doses = vaccination.doses
            lastDose = vaccination.lastDose.description
            completed = vaccination.completed?.description
            fullyVaccinated = HealthStatus(vaccination: vaccination).vaccinated(on: today)
        }

        enum CodingKeys: String, CodingKey { case doses, lastDose, completed, fullyVaccinated }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(doses, forKey: .doses)
            try container.encode(lastDose, forKey: .lastDose)
            try container.encode(completed, forKey: .completed)  // null, not absent
            try container.encode(fullyVaccinated, forKey: .fullyVaccinated)
        }
    }

    struct PresentedBody: ResponseEncodable {
        var issuers: [String]
        var doses: [DoseItem]
        var vaccination: VaccinationBody?
    }

    /// `application/fhir+json`, with any parameters.
    static func namesFHIRJSON(_ type: String) -> Bool {
        type.split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            == "application/fhir+json"
    }
}
