import AttestPlugins
import AttestPostgres
import AttestServer
import Foundation
import HTTPTypes
import Hummingbird
import Journal
import Tenancy

/// The member's episodes: `…/me/episodes` (start one, list them), `…/me/episodes/{id}` (read,
/// PATCH, DELETE), `…/me/episodes/{id}/stop` and `…/me/episodes/summary`. The member's own only.
struct EpisodeRoutes: Sendable {
    let services: AttestServices

    struct Factor: Encodable {
        var factor: String
        var value: Double
        var unit: String
    }

    struct Place: Encodable {
        var lat: Double
        var lon: Double
    }

    struct Body: ResponseEncodable {
        var episode: Episode

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(episode.id.lowercasedText, forKey: .id)
            try container.encode(episode.kind, forKey: .kind)
            try container.encode(episode.severity, forKey: .severity)
            try container.encode(episode.notes, forKey: .notes)
            try container.encode(PostgresDate.timestamp(episode.startedAt), forKey: .startedAt)
            try container.encode(episode.stoppedAt.map(PostgresDate.timestamp), forKey: .stoppedAt)
            try container.encode(episode.durationSeconds.map { $0 / 60 }, forKey: .durationMinutes)
            try container.encode(episode.autoClosed, forKey: .autoClosed)
            try container.encode(episode.location.map { Place(lat: $0.latitude, lon: $0.longitude) }, forKey: .location)
            try container.encode(Self.factors(episode.context), forKey: .context)
            try container.encode(Self.factors(episode.baseline), forKey: .baseline)
            try container.encode(episode.context?.madeUp == true || episode.baseline?.madeUp == true, forKey: .contextMadeUp)
            try container.encode(PostgresDate.timestamp(episode.createdAt), forKey: .createdAt)
            try container.encode(PostgresDate.timestamp(episode.updatedAt), forKey: .updatedAt)
        }

        static func factors(_ factors: EnvironmentFactors?) -> [Factor]? {
            factors.map { $0.values.compactMap { item in item.value.map { Factor(factor: item.name, value: $0, unit: item.unit) } } }
        }

        enum Keys: String, CodingKey {
            case id, kind, severity, notes, startedAt, stoppedAt, durationMinutes, autoClosed, location, context, baseline, contextMadeUp,
                createdAt, updatedAt
        }
    }

    struct Page: ResponseEncodable {
        var items: [Body]
        var nextCursor: String?

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(items, forKey: .items)
            try container.encode(nextCursor, forKey: .nextCursor)
        }

        enum CodingKeys: String, CodingKey { case items, nextCursor }
    }

    struct SummaryFactor: Encodable {
        var factor: String
        var unit: String
        var during: Double?
        var baseline: Double?

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(factor, forKey: .factor)
            try container.encode(unit, forKey: .unit)
            try container.encode(during.map(tenth), forKey: .during)
            try container.encode(baseline.map(tenth), forKey: .baseline)
        }

        enum CodingKeys: String, CodingKey { case factor, unit, during, baseline }
    }

    struct SummaryPart: Encodable {
        var part: EpisodeSummary.Part

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            if let month = part.month { try container.encode(month, forKey: .month) }
            try container.encode(part.count, forKey: .count)
            try container.encode(part.closed, forKey: .closed)
            try container.encode(part.totalMinutes, forKey: .totalMinutes)
            try container.encode(part.averageMinutes.map(tenth), forKey: .averageMinutes)
            try container.encode(
                part.factors.map { SummaryFactor(factor: $0.name, unit: $0.unit, during: $0.during, baseline: $0.baseline) },
                forKey: .factors)
        }

        enum CodingKeys: String, CodingKey { case month, count, closed, totalMinutes, averageMinutes, factors }
    }

    struct Summary: ResponseEncodable {
        var from: String
        var to: String
        var total: SummaryPart
        var months: [SummaryPart]
        /// True when any episode's weather came from a made-up model.
        var madeUp: Bool
        /// From the member's health profile, when it has height and weight.
        var bmi: Double?

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(from, forKey: .from)
            try container.encode(to, forKey: .to)
            try container.encode(total, forKey: .total)
            try container.encode(months, forKey: .months)
            try container.encode(madeUp, forKey: .madeUp)
            try container.encode(bmi.map(tenth), forKey: .bmi)
        }

        enum CodingKeys: String, CodingKey { case from, to, total, months, madeUp, bmi }
    }

    func register(on signedIn: RouterGroup<AttestRequestContext>) {
        let store = services.episodes
        signedIn.post("me/episodes") { request, context -> Response in
            let (campus, user) = try JournalRoutes.member(context)
            let now = services.clock()
            let body = try await request.jsonObject(context: context)
            let draft = try Self.draft(from: body, base: nil, kinds: EpisodeDraft.kinds(settings: EpisodeHTTP.settings(campus)), now: now)
            let episode = try await store.start(campus: campus, user: user, draft, context: services.episodeContext, now: now)
            var response = try Body(episode: episode).response(from: request, context: context)
            response.status = .created
            response.headers[.location] = "/v1/campuses/\(campus.slug)/me/episodes/\(episode.id.lowercasedText)"
            response.headers[.cacheControl] = "private, no-store"
            return response
        }
        signedIn.get("me/episodes") { request, context -> Response in
            let (campus, user) = try JournalRoutes.member(context)
            let (limit, cursor) = try QueryParameters.page(request) { EpisodeStore.Cursor(text: $0) }
            let page = try await store.list(campus: campus.id, user: user, after: cursor, limit: limit, now: services.clock())
            return try JournalRoutes.private(
                Page(items: page.episodes.map { Body(episode: $0) }, nextCursor: page.next?.text), request, context)
        }
        signedIn.get("me/episodes/summary") { request, context -> Response in
            let (campus, user) = try JournalRoutes.member(context)
            let now = services.clock()
            let query = QueryParameters(request, accepting: ["from", "to"])
            var problems = query.problems
            let (from, to) = query.dateRange(today: campus.localDate(at: now), problems: &problems)
            guard problems.isEmpty else { throw Problem.validation(problems) }
            let episodes = try await store.range(
                campus: campus.id, user: user, from: campus.startOfDay(from), to: campus.startOfDay(to.adding(days: 1)), now: now)
            let summary = EpisodeSummary(episodes, zone: campus.zone)
            let profile = try await services.profiles.profile(campus: campus.id, user: user)
            return try JournalRoutes.private(
                Summary(
                    from: from.description, to: to.description, total: SummaryPart(part: summary.total),
                    months: summary.months.map { SummaryPart(part: $0) }, madeUp: summary.madeUp, bmi: profile.bmi),
                request, context)
        }
        signedIn.get("me/episodes/{id}") { request, context -> Response in
            let (campus, user) = try JournalRoutes.member(context)
            let id = try Self.episodeID(context)
            guard let episode = try await store.find(campus: campus.id, user: user, id: id, now: services.clock())
            else {
                throw Problem(EpisodeError.notFound)
            }
            return try JournalRoutes.private(Body(episode: episode), request, context)
        }
        signedIn.post("me/episodes/{id}/stop") { request, context -> Response in
            let (campus, user) = try JournalRoutes.member(context)
            let id = try Self.episodeID(context)
            let now = services.clock()
            var reader = ObjectReader(try await Self.optionalObject(request, context), fields: ["stoppedAt"])
            let at = reader.instant("stoppedAt") ?? now
            if at > now.addingTimeInterval(60) { reader.problem("stoppedAt", "must not be in the future") }
            try reader.finish()
            let episode = try await store.stop(campus: campus.id, user: user, id: id, at: at, now: now)
            return try JournalRoutes.private(Body(episode: episode), request, context)
        }
        signedIn.patch("me/episodes/{id}") { request, context -> Response in
            let (campus, user) = try JournalRoutes.member(context)
            let id = try Self.episodeID(context)
            let now = services.clock()
            let body = try await request.jsonObject(context: context)
            guard let existing = try await store.find(campus: campus.id, user: user, id: id, now: now) else {
                throw Problem(EpisodeError.notFound)
            }
            let base = EpisodeDraft(
                kind: existing.kind, severity: existing.severity, notes: existing.notes, startedAt: existing.startedAt,
                stoppedAt: existing.stoppedAt,
                location: existing.location)
            let draft = try Self.draft(from: body, base: base, kinds: EpisodeDraft.kinds(settings: EpisodeHTTP.settings(campus)), now: now)
            let episode = try await store.update(campus: campus.id, user: user, id: id, draft, now: now)
            return try JournalRoutes.private(Body(episode: episode), request, context)
        }
        signedIn.delete("me/episodes/{id}") { _, context -> Response in
            let (campus, user) = try JournalRoutes.member(context)
            let id = try Self.episodeID(context)
            guard try await store.delete(campus: campus.id, user: user, id: id, now: services.clock()) else {
                throw Problem(EpisodeError.notFound)
            }
            return Response(status: .noContent, headers: [.cacheControl: "private, no-store"])
        }
    }

    static func episodeID(_ context: AttestRequestContext) throws -> UUID {
        guard let text = context.parameters.get("id"), let id = UUID(uuidString: text) else { throw Problem(EpisodeError.notFound) }
        return id
    }

    /// A JSON object body, or an empty one when no body was sent.
    static func optionalObject(_ request: Request, _ context: AttestRequestContext) async throws -> [String: JSONValue] {
        if request.headers[.contentLength] == "0" || (request.headers[.contentLength] == nil && request.headers[.contentType] == nil) {
            return [:]
        }
        return try await request.jsonObject(context: context)
    }

    /// The fields of a start (`kind` and `severity` required) or a PATCH (`base` holds the
    /// episode; only the fields given change). Every problem is named at once.
    static func draft(from body: [String: JSONValue], base: EpisodeDraft?, kinds: [String], now: Date) throws -> EpisodeDraft {
        var reader = ObjectReader(
            body,
            fields: base == nil
                ? ["kind", "severity", "notes", "startedAt", "location"] : ["kind", "severity", "notes", "startedAt", "stoppedAt"])
        var draft = base ?? EpisodeDraft(kind: "", severity: -1, startedAt: now)
        if let kind = reader.text("kind", required: base == nil ? "one of \(kinds.joined(separator: ", "))" : nil) { draft.kind = kind }
        let severity = reader.wholeNumber(
            "severity", in: 0...10, required: base == nil ? "a whole number from 0 to 10" : nil,
            wrong: "must be a whole number from 0 to 10")
        if let severity { draft.severity = severity }
        if let notes = reader.text("notes") { draft.notes = notes }
        if let startedAt = reader.instant("startedAt") { draft.startedAt = startedAt }
        if reader.object["stoppedAt"] == .null {
            if draft.stoppedAt != nil { reader.problem("stoppedAt", "cannot be removed: a stopped episode stays stopped") }
        } else if let stoppedAt = reader.instant("stoppedAt") {
            draft.stoppedAt = stoppedAt
        }
        if reader.object["location"] != .null {
            let location: CoarseLocation? = reader.value("location", wrong: #"must be {"lat": -90…90, "lon": -180…180}"#) { value in
                guard case .object(let point) = value, point.count == 2, case .number(let lat)? = point["lat"],
                    case .number(let lon)? = point["lon"]
                else { return nil }
                return CoarseLocation(latitude: lat, longitude: lon)
            }
            if let location { draft.location = location }
        }
        reader.add(draft.problems(kinds: kinds, now: now))
        try reader.finish()
        return draft
    }
}

private func tenth(_ value: Double) -> Double { (value * 10).rounded() / 10 }
