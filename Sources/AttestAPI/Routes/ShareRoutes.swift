import AttestFoundation
import AttestPlugins
import AttestPostgres
import AttestServer
import Foundation
import HTTPTypes
import Hummingbird
import Identity
import Journal
import Surveys
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
            var reader = ObjectReader(try await request.jsonObject(context: context), fields: ["expiresIn", "from", "to"])
            let lifetimes = JournalShare.lifetimes
            let seconds = reader.wholeNumber(
                "expiresIn", in: lifetimes, required: "whole seconds from 3600 (an hour) to 2592000 (30 days)",
                wrong: "is required: whole seconds from 3600 (an hour) to 2592000 (30 days)")
            let from = reader.date("from", required: "a date YYYY-MM-DD"), to = reader.date("to", required: "a date YYYY-MM-DD")
            if let from, let to, from > to || from.days(until: to) > 365 {
                reader.problem("from", "must not be after to, and the range at most 366 days")
            }
            try reader.finish()
            guard let seconds, let from, let to else { throw Problem.validation(reader.problems) }
            let session = try context.requireSession()
            let (share, token) = try await store.create(
                campus: campusValue.id, user: user, actor: "user:\(session.user.email)", from: from, to: to, seconds: seconds, now: now,
                quotas: MemberQuotas(campus: campusValue))
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
                            id: share.id.lowercasedText, from: share.from.description, to: share.to.description,
                            status: share.status(at: now),
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
        // A GET makes nothing: a page saying whose record it is, with a button per format (a
        // chat's or mail's link scanner fetches it without opening anything). The POST its
        // form sends makes the export and is the opening recorded.
        campus.get("shared/{token}") { request, context -> Response in
            let campusValue = try context.requireCampus()
            let query = QueryParameters(request, accepting: ["format"])
            guard query.problems.isEmpty else { throw Problem.validation(query.problems) }
            if let text = query["format"], MemberExport.Format(rawValue: text) == nil {
                throw Problem.validation([.init(field: "format", message: "must be pdf, csv or json")])
            }
            let link = try await Self.known(services: services, store: store, campus: campusValue, context: context) { token, now in
                try await store.describe(campus: campusValue.id, token: token, now: now)
            }
            let member = try await services.users.find(campus: campusValue.id, id: link.user)
            let page = Self.page(
                campus: campusValue, member: member.map(ExportHTTP.name(of:)) ?? "a member", link: link,
                chosen: query["format"].flatMap(MemberExport.Format.init(rawValue:)))
            return StandalonePage.response(page)
        }
        campus.post("shared/{token}") { request, context -> Response in
            let campusValue = try context.requireCampus()
            // The format from the query or the form (the form's wins); each must be one.
            var format = MemberExport.Format.pdf
            let query = QueryParameters(request, accepting: ["format"])
            guard query.problems.isEmpty else { throw Problem.validation(query.problems) }
            func known(_ text: String) throws -> MemberExport.Format {
                guard let format = MemberExport.Format(rawValue: text) else {
                    throw Problem.validation([.init(field: "format", message: "must be pdf, csv or json")])
                }
                return format
            }
            if let chosen = query["format"] { format = try known(chosen) }
            if request.headers[.contentType] != nil {
                let form = try await WebForm.read(request, context: context, limit: 1_024)
                for field in form.fields where field.name != "format" {
                    throw Problem.validation([.init(field: FieldProblem.name(field.name), message: "is not a field here (only format)")])
                }
                if let chosen = form["format"] { format = try known(chosen) }
            }
            // Whose journal first: an opening is one of that member's exports.
            let link = try await Self.known(services: services, store: store, campus: campusValue, context: context) { token, now in
                try await store.describe(campus: campusValue.id, token: token, now: now)
            }
            let ticket = try services.limiters.admitExport(campus: campusValue.id, member: link.user)
            do {
                let opened = try await Self.known(services: services, store: store, campus: campusValue, context: context) { token, now in
                    try await store.open(campus: campusValue.id, token: token, format: format.rawValue, now: now)
                }
                guard case .opened(let user, let from, let to) = opened else {
                    throw Problem(
                        .tooManyRequests, slug: "link-openings-exhausted", title: "This link was opened as often as a link may be",
                        detail:
                            "A link opens at most \(JournalShareStore.maxOpenings) times, and this one has been. Ask the member for a new link."
                    )
                }
                let member = try await services.users.find(campus: campusValue.id, id: user)
                let name = member.map(ExportHTTP.name(of:)) ?? "a member"
                return try await ExportHTTP.export(
                    services: services, campus: campusValue, user: user, member: name, from: from, to: to, format: format,
                    disposition: "inline", admitted: ticket)
            } catch {
                ticket.finished()
                throw error
            }
        }
    }

    /// `find`'s answer for the request's token, or the one 404 every unknown, expired,
    /// revoked or altered link gets; an address trying many is slowed (429).
    static func known<Value>(
        services: AttestServices, store: JournalShareStore, campus: Campus, context: AttestRequestContext,
        _ find: (_ token: String, _ now: Date) async throws -> Value?
    ) async throws -> Value {
        let address = context.clientAddress ?? "unknown"
        let limiter = services.limiters.unknownTokensByAddress
        if let wait = limiter.exhausted(address) {
            throw Problem.tooManyRequests("Too many links this campus does not know came from your address.", retryAfter: wait)
        }
        guard let found = try await find(context.parameters.get("token") ?? "", services.clock()) else {
            _ = limiter.take(address)
            throw Problem.notFound("This link does not open anything: it expired, was revoked, or was copied wrong. Ask for a new one.")
        }
        return found
    }

    /// The page a link shows: whose record, which range, until when, and a button per format
    /// (the one a `?format=` names first). No script, no style from elsewhere.
    static func page(campus: Campus, member: String, link: JournalShareStore.Described, chosen: MemberExport.Format?) -> String {
        let escape = HTMLText.escape
        let formats = [(MemberExport.Format.pdf, "PDF, to read or print"), (.csv, "CSV, for a spreadsheet"), (.json, "JSON, for software")]
            .sorted { first, _ in first.0 == chosen }
        let buttons = formats.map { format, words in
            #"<p><button type="submit" name="format" value="\#(format.rawValue)">Open as \#(words)</button></p>"#
        }.joined()
        let left = max(0, JournalShareStore.maxOpenings - link.openings)
        return """
            <!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">\
            <title>Health journal shared by \(escape(member))</title></head><body><main>\
            <h1>Health journal and episodes</h1>\
            <p>Shared by <strong>\(escape(member))</strong> of \(escape(campus.name)), from \(link.from) to \(link.to).</p>\
            <p>The link works until \(escape(PostgresDate.timestamp(link.expiresAt))) and may be opened \(left) more \(left == 1 ? "time" : "times"); \
            each opening is shown to \(escape(member)).</p>\
            <form method="post">\(buttons)</form></main></body></html>
            """
    }
}
