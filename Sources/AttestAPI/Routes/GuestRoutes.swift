import AttestPostgres
import AttestServer
import Foundation
import Hummingbird
import Identity

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

    func register(on campus: RouterGroup<AttestRequestContext>) {
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
                campus: campus, name: name, email: email, host: host, address: context.clientAddress, services: services)
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
