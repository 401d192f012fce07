import AttestPlugins
import AttestServer
import Foundation
import Hummingbird
import Records
import Tenancy

/// Health records as pages (the API's `me/records`, `me/exemptions` and `health/…`): the
/// member's `/c/{campus}/records` (tests, the isolation or quarantine in force, exemptions and
/// a form to ask for one), and the health officers' `/c/{campus}/health` (results nobody
/// matched, exemptions to decide, isolations in force with release, and a form to start one).
struct RecordsPages: Sendable {
    let web: WebRoutes
    var services: AttestServices { web.services }

    func register(on pages: RouterGroup<AttestRequestContext>) {
        pages.get("records") { request, context -> Response in
            let visit = try await web.visit(request, context)
            let query = request.uri.queryParameters
            let notice =
                query.get("asked") == "1" ? visit["exemptionAsked"] : query.get("card") == "1" ? visit["cardVerified"] : nil
            return try await recordsPage(visit: visit, notice: notice)
        }
        pages.post("records/exemptions") { request, context -> Response in
            let visit = try await web.visit(request, context)
            let form = try await WebForm.read(request, context: context)
            try web.checkCSRF(request, form: form, visit: visit)
            let user = try visit.privateUser()
            let kind = HealthStatus.ExemptionKind(rawValue: form["kind"] ?? "")
            let note = (form["note"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
            var errors = FormErrors()
            if kind == nil { errors.add("kind", anchor: "exemption-kind", visit["exemptionKindError"]) }
            if note.isEmpty || note.count > HealthRecords.maxNote {
                errors.add("note", anchor: "exemption-note", visit["exemptionNoteError"])
            }
            guard let kind, errors.isEmpty else {
                return try await recordsPage(visit: visit, note: note, errors: errors, status: .unprocessableContent)
            }
            do {
                _ = try await services.records.requestExemption(
                    campus: visit.campus, user: user.id, kind: kind, note: note, actor: "user:" + user.email, now: services.clock())
            } catch RecordsError.conflict {
                errors.add("kind", anchor: "exemption-kind", visit["exemptionWaiting"])
                return try await recordsPage(visit: visit, note: note, errors: errors, status: .conflict)
            }
            throw WebOutcome.redirect(visit.base + "records?asked=1")
        }
        pages.post("records/vaccinations") { request, context -> Response in
            let visit = try await web.visit(request, context)
            let form = try await WebForm.read(request, context: context, limit: Self.cardFormLimit)
            try web.checkCSRF(request, form: form, visit: visit)
            let user = try visit.privateUser()
            let pasted = (form["shc"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
            var errors = FormErrors()
            func refuse(_ message: String) async throws -> Response {
                errors.add("shc", anchor: "shc-text", message)
                return try await recordsPage(visit: visit, shc: pasted, errors: errors, status: .unprocessableContent)
            }
            let cards: [String]
            do {
                if let file = form.files.first {
                    switch try await Self.cardTexts(file.body) {
                    case .cards(let found): cards = found
                    case .qr(let text): cards = [try SmartHealthCards.jws(qr: [text])]
                    case .noCode: return try await refuse(visit["shcNoCode"])
                    case .notAnImage: return try await refuse(visit["shcNotImage"])
                    }
                } else if !pasted.isEmpty {
                    // One text a line: a whole card, or each of its chunks. A "\r\n" is one Character: split on scalars.
                    let lines = pasted.unicodeScalars.split { $0 == "\n" || $0 == "\r" }.map { String(String.UnicodeScalarView($0)) }
                    cards = [try SmartHealthCards.jws(qr: lines.filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty })]
                } else {
                    return try await refuse(visit["shcMissing"])
                }
                _ = try await services.records.presentCards(
                    campus: visit.campus, user: user, cards: cards, actor: "user:" + user.email, now: services.clock())
            } catch let refused as SmartHealthCards.Refused {
                return try await refuse(visit["shcRefused_" + refused.refusal.rawValue])
            }
            throw WebOutcome.redirect(visit.base + "records?card=1")
        }
        pages.get("health") { request, context -> Response in
            let visit = try await web.visit(request, context, roles: [.healthOfficer])
            let notice = request.uri.queryParameters.get("done") == "1" ? visit["healthDone"] : nil
            return try await healthPage(visit: visit, notice: notice)
        }
        // Each of a health officer's actions: a form posted back to the page, then the page again;
        // refused, the page with why in its words. The form to start an isolation keeps what was
        // typed, each problem by its field (`isolation-email` …); the others' forms are one button.
        func action(
            _ path: String, isolationForm: Bool = false, _ body: @escaping @Sendable (WebVisit, WebForm, UUID?) async throws -> Void
        ) {
            pages.post(RouterPath(stringLiteral: path)) { request, context -> Response in
                let visit = try await web.visit(request, context, roles: [.healthOfficer])
                let form = try await WebForm.read(request, context: context)
                try web.checkCSRF(request, form: form, visit: visit)
                let id = context.parameters.get("id").flatMap(UUID.init(uuidString:))
                do {
                    try await body(visit, form, id)
                } catch let error as RecordsError {
                    var errors = FormErrors()
                    let status: HTTPResponse.Status
                    switch error {
                    case .invalid(let problems):
                        status = .unprocessableContent
                        for problem in problems {
                            if isolationForm {
                                errors.add("isolation-" + problem.field, anchor: "isolation-" + problem.field, problem.message)
                            } else {
                                errors.add(problem.field, anchor: "health-title", problem.message)
                            }
                        }
                    case .notFound:
                        status = .notFound
                        errors.add("action", anchor: "health-title", visit["healthGone"])
                    case .noMember(let email):
                        // The email was typed into this form: said by its field.
                        status = .unprocessableContent
                        let message = visit.format("healthNoMember", String(email.prefix(320)))
                        if isolationForm {
                            errors.add("isolation-email", anchor: "isolation-email", message)
                        } else {
                            errors.add("email", anchor: "health-title", message)
                        }
                    case .conflict:
                        status = .conflict
                        errors.add("action", anchor: "health-title", visit["healthAlreadyDone"])
                    case .sealingUnavailable:
                        status = .serviceUnavailable
                        errors.add("action", anchor: "health-title", visit["healthNoKey"])
                    }
                    return try await healthPage(visit: visit, errors: errors, status: status, typed: isolationForm ? form : nil)
                }
                throw WebOutcome.redirect(visit.base + "health?done=1")
            }
        }
        let records = services.records
        action("health/results/:id/match") { visit, form, id in
            let email = (form["email"] ?? "").trimmingCharacters(in: .whitespaces)
            guard LabResult.email(email) != nil else { throw RecordsError.invalid([.init("email", visit["matchEmailError"])]) }
            try await records.match(campus: visit.campus, result: try Self.require(id), email: email, actor: try visit.signedInUser().email)
        }
        action("health/results/:id/dismiss") { visit, _, id in
            try await records.dismiss(campus: visit.campus, result: try Self.require(id), actor: try visit.signedInUser().email)
        }
        action("health/exemptions/:id") { visit, form, id in
            let approve = form["decision"] == "approved"
            let expires = (form["expires"]).flatMap { LocalDate($0) }
            guard approve || form["decision"] == "denied" else { throw RecordsError.invalid([.init("decision", visit["decisionError"])]) }
            do {
                try await records.decideExemption(
                    campus: visit.campus, id: try Self.require(id), approve: approve, expires: expires,
                    reason: String((form["reason"] ?? "").prefix(HealthRecords.maxReason)), actor: try visit.signedInUser().email,
                    now: services.clock())
            } catch RecordsError.invalid(let problems) {
                // A last day missing, past or too far: said in the page's words (Records' are the API's).
                throw RecordsError.invalid(
                    problems.map { $0.field == "expires" ? .init("expires", visit["exemptionExpiresError"]) : $0 })
            }
        }
        action("health/isolations", isolationForm: true) { visit, form, _ in
            guard let kind = HealthStatus.RestrictionKind(rawValue: form["kind"] ?? "") else {
                throw RecordsError.invalid([.init("kind", visit["isolationKindError"])])
            }
            let until = (form["until"] ?? "").isEmpty ? nil : form["until"].flatMap { LocalDate($0) }
            if !(form["until"] ?? "").isEmpty, until == nil { throw RecordsError.invalid([.init("until", visit["untilError"])]) }
            let email = (form["email"] ?? "").trimmingCharacters(in: .whitespaces)
            do {
                _ = try await records.start(
                    campus: visit.campus, email: email, kind: kind, startsOn: nil, until: until, actor: try visit.signedInUser().email,
                    now: services.clock())
            } catch RecordsError.invalid(let problems) {
                // Records' words are the API's; the page says each in its own.
                throw RecordsError.invalid(
                    problems.map { problem in
                        switch problem.field {
                        case "email": .init("email", visit["isolationEmailError"])
                        case "until": .init("until", visit.format("isolationUntilError", "\(RecordsPolicy.days.upperBound)"))
                        default: problem
                        }
                    })
            }
        }
        action("health/isolations/:id/release") { visit, _, id in
            try await records.release(campus: visit.campus, id: try Self.require(id), actor: try visit.signedInUser().email)
        }
    }

    /// A photo of a QR code, or a `.smart-health-card` file.
    static let cardFormLimit = 12 << 20

    enum CardFile {
        case cards([String])
        case qr(String)
        case noCode
        case notAnImage
    }

    /// What a chosen file holds: a `.smart-health-card` file's cards (JSON), or the QR code of a
    /// photo, read on the scanner's threads.
    static func cardTexts(_ body: Data) async throws(SmartHealthCards.Refused) -> CardFile {
        let first = body.first { !($0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09) }
        if first == UInt8(ascii: "{") { return .cards(try SmartHealthCards.jws(file: body)) }
        switch await BadgeImage.scan(ByteBuffer(bytes: body)) {
        case .found(let text): return .qr(text)
        case .notAnImage: return .notAnImage
        default: return .noCode
        }
    }

    /// The path's id, or the page's 404 for one that is no id.
    static func require(_ id: UUID?) throws -> UUID {
        guard let id else { throw RecordsError.notFound("no such record here") }
        return id
    }

    private func recordsPage(
        visit: WebVisit, notice: String? = nil, note: String = "", shc: String = "", errors: FormErrors = FormErrors(),
        status: HTTPResponse.Status = .ok
    ) async throws -> Response {
        let user = try visit.privateUser()
        let campus = visit.campus, today = campus.localDate(at: services.clock())
        let record = try await services.records.record(campus: campus, user: user.id)
        let exemptions = try await services.records.exemptions(campus: campus, user: user.id)
        var data: [String: Any] = [
            "hasTests": !record.tests.isEmpty,
            "tests": record.tests.map { test -> [String: Any] in
                [
                    "collected": WebFormat.dateTime(test.collectedAt, campus: campus, language: visit.language),
                    "name": LabResult.acceptedTests[test.code] ?? test.code,
                    "result": visit[test.detected ? "resultDetected" : "resultNotDetected"], "detected": test.detected,
                ]
            },
            "exemptions": exemptions.map { exemption -> [String: Any] in
                // The kind inside a sentence: "Medical exemption", "Exención médica".
                let kind = visit["exemptionKindInSentence_" + exemption.kind.rawValue]
                let text: String
                switch exemption.status {
                case .pending: text = visit.format("exemptionPending", kind)
                case .approved:
                    text = visit.format(
                        "exemptionApproved", kind,
                        exemption.expires.map { WebFormat.date($0, campus: campus, language: visit.language) } ?? "")
                case .denied: text = visit.format("exemptionDenied", kind)
                case .ended:
                    text = visit.format(
                        "exemptionEnded", kind,
                        exemption.decidedAt.map { WebFormat.date(campus.localDate(at: $0), campus: campus, language: visit.language) } ?? ""
                    )
                }
                return ["text": text, "reason": exemption.reason]
            },
            "kinds": HealthStatus.ExemptionKind.allCases.map { ["value": $0.rawValue, "label": visit["exemptionKind_" + $0.rawValue]] },
            "note": errors.field("note", value: note), "kindError": errors["kind"] ?? "",
            "shc": errors.field("shc", value: shc),
            "hasDoses": !record.doses.isEmpty,
            "doses": record.doses.map { kept -> [String: Any] in
                [
                    "date": WebFormat.date(kept.dose.date, campus: campus, language: visit.language),
                    "vaccine": Self.vaccines[kept.dose.cvx] ?? visit.format("cvxOther", kept.dose.cvx), "issuer": kept.issuer,
                ]
            },
            "canAsk": !exemptions.contains { $0.status == .pending },
        ]
        if let restriction = record.status.restriction(on: today) {
            data["restriction"] = visit.format(
                restriction.kind == .isolation ? "isolationUntil" : "quarantineUntil",
                WebFormat.date(restriction.until, campus: campus, language: visit.language))
        }
        if let vaccination = record.status.vaccination {
            data["vaccination"] =
                if let completed = vaccination.completed {
                    visit.format("vaccinationComplete", WebFormat.date(completed, campus: campus, language: visit.language))
                } else {
                    visit.format("vaccinationIncomplete", "\(vaccination.doses)")
                }
        }
        if let notice { data["notice"] = notice }
        errors.summary(into: &data)
        return try web.renderer.render(
            .init(
                template: "records", title: errors.title(visit["recordsTitle"], visit: visit), data: data.droppingEmptyText(),
                status: status, scripts: ["shc.js"], current: "records"), visit: visit)
    }

    /// The makers' names of the common COVID-19 vaccines' CVX codes (CDC's CVX table); others
    /// are shown by their code.
    static let vaccines = [
        "207": "Moderna", "208": "Pfizer-BioNTech", "210": "AstraZeneca", "211": "Novavax", "212": "Janssen (J&J)",
        "217": "Pfizer-BioNTech", "218": "Pfizer-BioNTech", "219": "Pfizer-BioNTech", "221": "Moderna", "510": "Sinopharm",
        "511": "CoronaVac (Sinovac)",
    ]

    private func healthPage(
        visit: WebVisit, notice: String? = nil, errors: FormErrors = FormErrors(), status: HTTPResponse.Status = .ok,
        typed: WebForm? = nil
    ) async throws -> Response {
        let campus = visit.campus, actor = try visit.signedInUser().email, now = services.clock()
        let unmatched = try await services.records.unmatched(campus: campus, actor: actor)
        let exemptions = try await services.records.exemptions(campus: campus, status: .pending, actor: actor)
        let inForce = try await services.records.exemptions(
            campus: campus, status: .approved, inForceOn: campus.localDate(at: now), actor: actor)
        let restrictions = try await services.records.restrictions(campus: campus, on: campus.localDate(at: now), actor: actor)
        var data: [String: Any] = [
            "hasUnmatched": !unmatched.isEmpty,
            "unmatched": unmatched.map { item -> [String: Any] in
                [
                    "id": item.id.lowercasedText, "specimen": item.result.specimenID, "subject": item.result.subject,
                    "test": LabResult.acceptedTests[item.result.testCode] ?? item.result.testCode,
                    "result": visit[item.result.detected ? "resultDetected" : "resultNotDetected"],
                    "collected": WebFormat.dateTime(item.result.collectedAt, campus: campus, language: visit.language),
                ]
            },
            "hasExemptions": !exemptions.isEmpty,
            "exemptions": exemptions.map { item -> [String: Any] in
                [
                    "id": item.id.lowercasedText, "name": item.name, "email": item.email,
                    "kind": visit["exemptionKind_" + item.kind.rawValue],
                    "note": item.note, "requested": WebFormat.dateTime(item.requestedAt, campus: campus, language: visit.language),
                ]
            },
            "hasInForce": !inForce.isEmpty,
            "inForce": inForce.map { item -> [String: Any] in
                [
                    "id": item.id.lowercasedText, "name": item.name, "email": item.email,
                    "kind": visit["exemptionKind_" + item.kind.rawValue], "expires": item.expires?.description ?? "",
                    "until": item.expires.map { WebFormat.date($0, campus: campus, language: visit.language) } ?? "",
                ]
            },
            "hasRestrictions": !restrictions.isEmpty,
            "restrictions": restrictions.map { item -> [String: Any] in
                [
                    "id": item.id.lowercasedText, "name": item.name, "email": item.email,
                    "kind": visit[item.kind == .isolation ? "isolationWord" : "quarantineWord"],
                    "until": WebFormat.date(item.until, campus: campus, language: visit.language),
                    "source": visit[item.fromResult ? "fromResult" : "byHand"],
                ]
            },
        ]
        // The days a last day may be: the browser's date fields refuse others before sending.
        let today = campus.localDate(at: now)
        (data["firstDay"], data["lastDay"]) = (today.description, today.adding(days: HealthRecords.maxExemptionDays).description)
        let kind = typed?["kind"] ?? "isolation"
        data["isolation"] = [
            "email": errors.field("isolation-email", value: typed?["email"] ?? ""),
            "until": errors.field("isolation-until", value: typed?["until"] ?? ""),
            "kindError": errors["isolation-kind"] ?? "", "quarantine": kind == "quarantine",
        ].droppingEmptyText()
        if let notice { data["notice"] = notice }
        errors.summary(into: &data)
        return try web.renderer.render(
            .init(
                template: "health", title: errors.title(visit["healthTitle"], visit: visit), data: data, status: status, wide: true,
                current: "health"), visit: visit)
    }
}
