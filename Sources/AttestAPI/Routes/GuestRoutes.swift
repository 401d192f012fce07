import AttestFoundation
import AttestPlugins
import AttestPostgres
import AttestServer
import Foundation
import Hummingbird
import Identity
import Surveys

/// Visitors (DESIGN §12): `POST …/guests/visits` registers a visit and emails its code;
/// `POST …/guests/visits/{id}/verify` trades the code for the guest's pass, a bearer token good
/// for that campus-local day with which `GET …/survey`, `POST …/attestations` and
/// `GET …/me/badge` work as a member's do, and nothing else.
struct GuestRoutes: Sendable {
    let services: AttestServices

    struct Created: ResponseEncodable {
        var id: String
        /// When the emailed code stops working.
        var expiresAt: String
    }

    struct Pass: ResponseEncodable {
        var token: String
        var expiresAt: String
    }

    /// The day's guests as health officers see them: counts by colour, and the red and yellow
    /// ones with their host.
    struct Day: ResponseEncodable {
        struct Counts: Encodable {
            var green, yellow, red: Int
        }

        struct FollowUp: Encodable {
            var id, name, email, host, color, reason: String
        }

        var date: String
        var counts: Counts
        var followUps: [FollowUp]
    }

    func register(on campus: RouterGroup<AttestRequestContext>) {
        // Identifiable: health officers only, the read audited (`guests.read`) when it names anyone.
        let health = campus.group("health/guests").add(middleware: AuthenticationMiddleware(services: services, roles: [.healthOfficer]))
        health.get { request, context -> Day in
            let campus = try context.requireCampus()
            let user = try context.requireSession().user
            let query = QueryParameters(request, accepting: ["date"])
            var problems = query.problems
            var date = campus.localDate(at: services.clock())
            if let text = query["date"] {
                if let given = LocalDate(text) {
                    date = given
                } else {
                    problems.append(.init(field: "date", message: "must be a date as YYYY-MM-DD, got \"\(text.prefix(40))\""))
                }
            }
            guard problems.isEmpty else { throw Problem.validation(problems) }
            let counts = try await services.guests.counts(campus: campus.id, date: date)
            let followUps = try await services.guests.followUps(campus: campus.id, date: date, actor: "user:\(user.email)")
            return Day(
                date: date.description,
                counts: Day.Counts(green: counts[.green] ?? 0, yellow: counts[.yellow] ?? 0, red: counts[.red] ?? 0),
                followUps: followUps.map {
                    Day.FollowUp(
                        id: $0.id.lowercasedText, name: $0.name, email: $0.email, host: $0.hostName, color: $0.color?.rawValue ?? "gray",
                        reason: $0.reason ?? "")
                })
        }
        campus.post("guests/visits") { request, context -> Response in
            let campus = try context.requireCampus()
            var reader = ObjectReader(
                try await request.jsonObject(context: context), fields: ["name", "email", "host"], unknown: "is not a field of a visit")
            let name = reader.text("name", required: "your name as your badge shows it", wrong: "must be your name as text")
            let email = reader.text("email", required: "the address the code is sent to", wrong: "must be an email address as text")
            let host = reader.text(
                "host", required: "the name or email address of the member you visit", wrong: "must be your host's name or email as text")
            try reader.finish()
            guard let name, let email, let host else { throw Problem.validation(reader.problems) }
            let registration = try await GuestHTTP.register(
                campus: campus, name: name, email: email, host: host, address: context.clientAddress,
                // The code's email in the language the client asks for (Spanish, else English).
                language: Questionnaire.bestLanguage(request.headers[.acceptLanguage] ?? "", available: Set(WrittenLanguages.all)) ?? "en",
                services: services)
            var response = try Created(
                id: registration.visit.id.lowercasedText, expiresAt: PostgresDate.timestamp(registration.codeExpiresAt)
            ).response(from: request, context: context)
            response.status = .created
            response.headers[.location] = "/v1/campuses/\(campus.slug)/guests/visits/\(registration.visit.id.lowercasedText)"
            return response
        }
        campus.post("guests/visits/:id/verify") { request, context -> Pass in
            let campus = try context.requireCampus()
            guard let id = context.parameters.get("id").flatMap(UUID.init(uuidString:)) else {
                throw Problem.notFound("There is no such visit at this campus: register again.")
            }
            var reader = ObjectReader(
                try await request.jsonObject(context: context), fields: ["code"], unknown: "is not a field of a code check")
            let code = reader.text(
                "code", required: "the six digits the email gave", wrong: "must be the six digits as text, such as \"042917\"")
            try reader.finish()
            guard let code else { throw Problem.validation(reader.problems) }
            let pass = try await services.guests.verify(campus: campus, visit: id, code: code, now: services.clock())
            return Pass(token: pass.token, expiresAt: PostgresDate.timestamp(pass.expiresAt))
        }
    }
}
