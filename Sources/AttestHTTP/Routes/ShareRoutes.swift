import AttestPlugins
import AttestPostgres
import Foundation
import HTTPTypes
import Hummingbird
import Identity
import Journal
import Tenancy

/// Links a member gives a clinician: `POST|GET …/me/shares`, `DELETE …/me/shares/{id}`, and the
/// view a link opens, `GET …/shared/{token}?format=pdf|csv|json`, which needs no sign-in.
struct ShareRoutes: Sendable {
    let services: AttestServices

    struct Created: ResponseEncodable {
        var id: String
        var url: String
        var expiresAt: String
        var from: String
        var to: String
    }

    struct Opening: Encodable {
        var openedAt: String
        var format: String
    }

    struct Item: Encodable {
        var id: String
        var from: String
        var to: String
        var status: String
        var expiresAt: String
        var revokedAt: String?
        var createdAt: String
        var openings: [Opening]

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(id, forKey: .id)
            try container.encode(from, forKey: .from)
            try container.encode(to, forKey: .to)
            try container.encode(status, forKey: .status)
            try container.encode(expiresAt, forKey: .expiresAt)
            try container.encode(revokedAt, forKey: .revokedAt)
            try container.encode(createdAt, forKey: .createdAt)
            try container.encode(openings, forKey: .openings)
        }

        enum CodingKeys: String, CodingKey { case id, from, to, status, expiresAt, revokedAt, createdAt, openings }
    }

    struct Items: ResponseEncodable {
        var items: [Item]
    }

    var store: JournalShareStore { JournalShareStore(client: services.database) }

    func register(campus: RouterGroup<AttestRequestContext>, signedIn: RouterGroup<AttestRequestContext>) {
        signedIn.post("me/shares") { request, context -> Response in
            let (campusValue, user) = try JournalRoutes.member(context)
            let now = services.clock()
            let body = try await request.jsonObject(context: context)
            var problems: [Problem.FieldError] = []
            for key in body.keys.sorted() where !["expiresIn", "from", "to"].contains(key) {
                problems.append(.init(field: key.isEmpty ? "(a member without a name)" : String(key.prefix(40)), message: "is not a field here (expiresIn, from, to)"))
            }
            var seconds = 0
            let lifetimes = JournalShare.lifetimes
            if case .number(let number)? = body["expiresIn"], number.rounded() == number, Double(lifetimes.lowerBound)...Double(lifetimes.upperBound) ~= number {
                seconds = Int(number)
            } else {
                problems.append(.init(field: "expiresIn", message: "is required: whole seconds from 3600 (an hour) to 2592000 (30 days)"))
            }
            func date(_ name: String) -> LocalDate? {
                if case .string(let text)? = body[name], let date = LocalDate(text) { return date }
                problems.append(.init(field: name, message: "is required: a date YYYY-MM-DD"))
                return nil
            }
            let from = date("from"), to = date("to")
            if let from, let to, from > to || from.days(until: to) > 365 {
                problems.append(.init(field: "from", message: "must not be after to, and the range at most 366 days"))
            }
            guard problems.isEmpty, let from, let to else { throw Problem.validation(problems) }
            let session = try context.requireSession()
            let (share, token) = try await store.create(
                campus: campusValue.id, user: user, actor: "user:\(session.user.email)", from: from, to: to, seconds: seconds, now: now)
            var response = try Created(
                id: share.id.lowercasedText, url: "/v1/campuses/\(campusValue.slug)/shared/\(token)",
                expiresAt: PostgresDate.timestamp(share.expiresAt), from: from.description, to: to.description
            ).response(from: request, context: context)
            response.status = .created
            response.headers[.cacheControl] = "private, no-store"
            return response
        }
        signedIn.get("me/shares") { request, context -> Response in
            let (campusValue, user) = try JournalRoutes.member(context)
            let query = QueryParameters(request, accepting: [])
            guard query.problems.isEmpty else { throw Problem.validation(query.problems) }
            let now = services.clock()
            let shares = try await store.list(campus: campusValue.id, user: user)
            return try JournalRoutes.private(
                Items(
                    items: shares.map { share in
                        Item(
                            id: share.id.lowercasedText, from: share.from.description, to: share.to.description, status: share.status(at: now),
                            expiresAt: PostgresDate.timestamp(share.expiresAt), revokedAt: share.revokedAt.map(PostgresDate.timestamp),
                            createdAt: PostgresDate.timestamp(share.createdAt),
                            openings: share.openings.map { Opening(openedAt: PostgresDate.timestamp($0.openedAt), format: $0.format) })
                    }), request, context)
        }
        signedIn.delete("me/shares/{id}") { _, context -> Response in
            let (campusValue, user) = try JournalRoutes.member(context)
            guard let text = context.parameters.get("id"), let id = UUID(uuidString: text),
                try await store.revoke(campus: campusValue.id, user: user, id: id, now: services.clock())
            else {
                throw Problem.notFound("You have no such link, or it was revoked before: GET …/me/shares lists yours.")
            }
            return Response(status: .noContent, headers: [.cacheControl: "private, no-store"])
        }
        // The clinician's view: no session; the token is the key. Every refusal looks the same.
        campus.get("shared/{token}") { request, context -> Response in
            let campusValue = try context.requireCampus()
            let (_, _, format) = try ExportRoutes.parse(
                QueryParameters(request, accepting: ["format"]), today: campusValue.localDate(at: services.clock()), defaultFormat: .pdf)
            let address = context.clientAddress ?? "unknown"
            let limiter = services.limiters.unknownTokensByAddress
            if let wait = limiter.exhausted(address) {
                throw Problem.tooManyRequests("Too many links this campus does not know came from your address.", retryAfter: wait)
            }
            let token = context.parameters.get("token") ?? ""
            guard let opened = try await store.open(campus: campusValue.id, token: token, format: format.rawValue, now: services.clock()) else {
                _ = limiter.take(address)
                throw Problem.notFound("This link does not open anything: it expired, was revoked, or was copied wrong. Ask for a new one.")
            }
            let member = try await services.users.find(campus: campusValue.id, id: opened.user)
            let name = member.map(ExportRoutes.name(of:)) ?? "a member"
            return try await ExportRoutes.export(
                services: services, campus: campusValue, user: opened.user, member: name, from: opened.from, to: opened.to, format: format,
                disposition: "inline")
        }
    }
}
