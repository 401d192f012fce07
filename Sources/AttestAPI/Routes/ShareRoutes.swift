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

    func register(links: RouterGroup<AttestRequestContext>, signedIn: RouterGroup<AttestRequestContext>) {
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
        links.get("shared/{token}") { request, context -> Response in
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
            let language = StandalonePage.language(request)
            let page = Self.page(
                campus: campusValue, member: member.map(ExportHTTP.name(of:)) ?? ShareWords.of(language).someone, link: link,
                chosen: query["format"].flatMap(MemberExport.Format.init(rawValue:)), language: language)
            return StandalonePage.response(page)
        }
        links.post("shared/{token}") { request, context -> Response in
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
                let language = StandalonePage.language(request)
                let name = member.map(ExportHTTP.name(of:)) ?? ShareWords.of(language).someone
                return try await ExportHTTP.export(
                    services: services, campus: campusValue, user: user, member: name, from: from, to: to, format: format,
                    language: language, disposition: "inline", admitted: ticket)
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

    /// The page a link shows, in the browser's language: whose record, which range, until
    /// when, and a button per format (the one a `?format=` names first). No script, no style
    /// from elsewhere.
    static func page(
        campus: Campus, member: String, link: JournalShareStore.Described, chosen: MemberExport.Format?, language: String
    ) -> String {
        let escape = HTMLText.escape, words = ShareWords.of(language)
        let formats = [(MemberExport.Format.pdf, words.openPDF), (.csv, words.openCSV), (.json, words.openJSON)]
            .sorted { first, _ in first.0 == chosen }
        let buttons = formats.map { format, words in
            #"<p><button type="submit" name="format" value="\#(format.rawValue)">\#(words)</button></p>"#
        }.joined()
        let left = max(0, JournalShareStore.maxOpenings - link.openings)
        let body =
            "<h1>\(words.heading)</h1><p>"
            + words.sharedBy.filled([
                "member": "<strong>\(escape(member))</strong>", "campus": escape(campus.name), "from": "\(link.from)", "to": "\(link.to)",
            ]) + "</p><p>"
            + (left == 1 ? words.opensOnce : words.opensLeft).filled([
                "until": escape(PostgresDate.timestamp(link.expiresAt)), "left": "\(left)", "member": escape(member),
            ]) + "</p><form method=\"post\">\(buttons)</form>"
        return StandalonePage.html(language: language, title: words.title.filled(["member": escape(member)]), campus: nil, body: body)
    }

    /// The page a refusal shows a browser (`LinkRefusalPages`): the link opens nothing (unknown
    /// here, expired, revoked, cut short, or its campus unknown), it was opened as often as a
    /// link may be, its address asks for what a link does not offer, or too many tries.
    static func refusal(_ problem: Problem, campus: Campus?, language: String) -> String {
        let words = ShareWords.of(language)
        let (title, text): (String, String)
        switch problem.status {
        case .tooManyRequests where problem.slug == "link-openings-exhausted":
            (title, text) = (words.usedUpTitle, words.usedUp.filled(["max": "\(JournalShareStore.maxOpenings)"]))
        case .tooManyRequests: (title, text) = (words.busyTitle, words.busy)
        case .unprocessableContent: (title, text) = (words.changedTitle, words.changed)
        default: (title, text) = (words.brokenTitle, words.broken)
        }
        return StandalonePage.html(language: language, title: title, campus: campus, body: "<h1>\(title)</h1><p>\(text)</p>")
    }
}

/// The words of a clinician's page and of its refusals, in each language those pages speak.
/// `{member}`, `{campus}`, `{from}`, `{to}`, `{until}`, `{left}` and `{max}` are filled in.
struct ShareWords: Wording {
    var title, heading, sharedBy, opensLeft, opensOnce, openPDF, openCSV, openJSON, someone: String
    var brokenTitle, broken, usedUpTitle, usedUp, changedTitle, changed, busyTitle, busy: String

    static let english = ShareWords(
        title: "Health journal shared by {member}", heading: "Health journal and episodes",
        sharedBy: "Shared by {member} of {campus}, from {from} to {to}.",
        opensLeft: "The link works until {until} and may be opened {left} more times; each opening is shown to {member}.",
        opensOnce: "The link works until {until} and may be opened {left} more time; each opening is shown to {member}.",
        openPDF: "Open as PDF, to read or print", openCSV: "Open as CSV, for a spreadsheet", openJSON: "Open as JSON, for software",
        someone: "a member",
        brokenTitle: "This link does not open anything",
        broken: "It expired, was revoked, or was copied wrong or cut short. Ask the person who shared it for a new link.",
        usedUpTitle: "This link was opened as often as a link may be",
        usedUp: "A link opens at most {max} times, and this one has been. Ask the person who shared it for a new link.",
        changedTitle: "This link was changed",
        changed:
            "Its address asks for something a shared link does not offer (it opens as PDF, CSV or JSON). Open the link as it was given to you.",
        busyTitle: "Too many tries",
        busy: "Too many requests came for this just now. Wait a few minutes and try again.")
    static let spanish = ShareWords(
        title: "Diario de salud compartido por {member}", heading: "Diario de salud y episodios",
        sharedBy: "Compartido por {member} de {campus}, del {from} al {to}.",
        opensLeft: "El enlace funciona hasta {until} y puede abrirse {left} veces más; cada apertura se le muestra a {member}.",
        opensOnce: "El enlace funciona hasta {until} y puede abrirse {left} vez más; cada apertura se le muestra a {member}.",
        openPDF: "Abrir como PDF, para leer o imprimir", openCSV: "Abrir como CSV, para una hoja de cálculo",
        openJSON: "Abrir como JSON, para programas", someone: "un miembro",
        brokenTitle: "Este enlace no abre nada",
        broken: "Caducó, se revocó, o se copió mal o incompleto. Pida un enlace nuevo a la persona que lo compartió.",
        usedUpTitle: "Este enlace ya se abrió todas las veces permitidas",
        usedUp: "Un enlace se abre como máximo {max} veces, y este ya se abrió tantas. Pida un enlace nuevo a la persona que lo compartió.",
        changedTitle: "Este enlace se modificó",
        changed:
            "Su dirección pide algo que un enlace compartido no ofrece (se abre como PDF, CSV o JSON). Abra el enlace tal como se lo dieron.",
        busyTitle: "Demasiados intentos",
        busy: "Llegaron demasiadas solicitudes para esto hace un momento. Espere unos minutos y vuelva a intentarlo.")
}
