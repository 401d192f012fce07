import AttestPlugins
import AttestPostgres
import AttestServer
import Foundation
import HTTPTypes
import Hummingbird
import Journal
import Tenancy

/// The member's private journal: `…/me/journal` (entries, newest first, with a cursor),
/// `…/me/journal/{id}` (read, PATCH, DELETE) and `…/me/journal/{id}/audio` (PUT raw bytes,
/// GET with ranges, DELETE). Only the member's own entries, whoever else they are.
struct JournalRoutes: Sendable {
    let services: AttestServices

    struct Audio: Encodable {
        var type: String
        var size: Int
        var url: String
    }

    struct Entry: ResponseEncodable {
        var id: String
        var date: String
        var title: String
        var text: String
        var tags: [String]
        var audio: Audio?
        var createdAt: String
        var updatedAt: String

        init(_ entry: JournalEntry, campus: String) {
            id = entry.id.lowercasedText
            date = entry.date.description
            title = entry.title
            text = entry.text
            tags = entry.tags.map(\.rawValue)
            audio = entry.audio.map {
                Audio(type: $0.type.rawValue, size: $0.size, url: "/v1/campuses/\(campus)/me/journal/\(entry.id.lowercasedText)/audio")
            }
            createdAt = PostgresDate.timestamp(entry.createdAt)
            updatedAt = PostgresDate.timestamp(entry.updatedAt)
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(id, forKey: .id)
            try container.encode(date, forKey: .date)
            try container.encode(title, forKey: .title)
            try container.encode(text, forKey: .text)
            try container.encode(tags, forKey: .tags)
            try container.encode(audio, forKey: .audio)  // null when there is none
            try container.encode(createdAt, forKey: .createdAt)
            try container.encode(updatedAt, forKey: .updatedAt)
        }

        enum CodingKeys: String, CodingKey { case id, date, title, text, tags, audio, createdAt, updatedAt }
    }

    struct Page: ResponseEncodable {
        var items: [Entry]
        var nextCursor: String?

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(items, forKey: .items)
            try container.encode(nextCursor, forKey: .nextCursor)
        }

        enum CodingKeys: String, CodingKey { case items, nextCursor }
    }

    var store: JournalStore { services.journal }

    struct Privacy: ResponseEncodable {
        var journalKeepDays: Int?

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(journalKeepDays, forKey: .journalKeepDays)  // null: forever
        }

        enum CodingKeys: String, CodingKey { case journalKeepDays }
    }

    func register(on signedIn: RouterGroup<AttestRequestContext>) {
        let settings = MemberSettingsStore(client: services.database)
        signedIn.get("me/privacy") { request, context -> Response in
            let (campus, user) = try Self.member(context)
            let query = QueryParameters(request, accepting: [])
            guard query.problems.isEmpty else { throw Problem.validation(query.problems) }
            return try Self.private(
                Privacy(journalKeepDays: try await settings.journalKeepDays(campus: campus.id, user: user)), request, context)
        }
        signedIn.put("me/privacy") { request, context -> Response in
            let (campus, user) = try Self.member(context)
            var reader = ObjectReader(try await request.jsonObject(context: context), fields: ["journalKeepDays"])
            let kept: Int?? = reader.value(
                "journalKeepDays", required: "whole days from 1 to 3650, or null to keep forever",
                wrong: "must be whole days from 1 to 3650, or null to keep forever"
            ) { $0 == .null ? .some(nil) : $0.wholeNumber(in: 1...3650).map { .some($0) } }
            try reader.finish()
            guard let kept else { throw Problem.validation(reader.problems) }
            let days = kept
            try await settings.setJournalKeepDays(campus: campus.id, user: user, days: days, now: services.clock())
            return try Self.private(Privacy(journalKeepDays: days), request, context)
        }
        signedIn.post("me/journal") { request, context -> Response in
            let (campus, user) = try Self.member(context)
            let today = campus.localDate(at: services.clock())
            let draft = try JournalHTTP.draft(
                from: try await request.jsonObject(context: context, limit: JournalHTTP.bodyLimit), base: nil, today: today)
            let entry = try await store.create(
                campus: campus.id, user: user, draft, at: services.clock(), quotas: MemberQuotas(campus: campus))
            var response = try Entry(entry, campus: campus.slug).response(from: request, context: context)
            response.status = .created
            response.headers[.location] = "/v1/campuses/\(campus.slug)/me/journal/\(entry.id.lowercasedText)"
            response.headers[.cacheControl] = "private, no-store"
            return response
        }
        signedIn.get("me/journal") { request, context -> Response in
            let (campus, user) = try Self.member(context)
            let (limit, cursor) = try QueryParameters.page(request) { JournalStore.Cursor(text: $0) }
            let page = try await store.list(campus: campus.id, user: user, after: cursor, limit: limit)
            return try Self.private(
                Page(items: page.entries.map { Entry($0, campus: campus.slug) }, nextCursor: page.next?.text), request, context)
        }
        signedIn.get("me/journal/{id}") { request, context -> Response in
            let (campus, user) = try Self.member(context)
            let id = try Self.entryID(context)
            guard let entry = try await store.find(campus: campus.id, user: user, id: id) else {
                throw Problem(JournalError.notFound)
            }
            return try Self.private(Entry(entry, campus: campus.slug), request, context)
        }
        signedIn.patch("me/journal/{id}") { request, context -> Response in
            let (campus, user) = try Self.member(context)
            let id = try Self.entryID(context)
            let body = try await request.jsonObject(context: context, limit: JournalHTTP.bodyLimit)
            guard let existing = try await store.find(campus: campus.id, user: user, id: id) else {
                throw Problem(JournalError.notFound)
            }
            let base = JournalDraft(date: existing.date, title: existing.title, text: existing.text, tags: existing.tags)
            let draft = try JournalHTTP.draft(from: body, base: base, today: campus.localDate(at: services.clock()))
            let entry = try await store.update(campus: campus.id, user: user, id: id, draft, at: services.clock())
            return try Self.private(Entry(entry, campus: campus.slug), request, context)
        }
        signedIn.delete("me/journal/{id}") { _, context -> Response in
            let (campus, user) = try Self.member(context)
            let id = try Self.entryID(context)
            guard try await store.delete(campus: campus.id, user: user, id: id) else {
                throw Problem(JournalError.notFound)
            }
            return Response(status: .noContent, headers: [.cacheControl: "private, no-store"])
        }
        signedIn.put("me/journal/{id}/audio") { request, context -> Response in
            let (campus, user) = try Self.member(context)
            let id = try Self.entryID(context)
            guard let declared = request.headers[.contentType].flatMap(AudioType.named) else {
                throw Self.unsupported(
                    "Send the recording's bytes with its type: audio/webm, audio/ogg, audio/mpeg, audio/mp4 or audio/wav.")
            }
            // A declared length is counted before a byte is read.
            if let declared = request.headers[.contentLength].flatMap({ Int($0) }), declared > 0, declared <= AudioType.maxSize {
                try services.limiters.admitRecording(campus: campus.id, member: user, bytes: declared)
            }
            let bytes = try await Self.recordingBytes(request, context)
            let sniffed: AudioType
            switch AudioType.check(bytes, declared: declared) {
            case .success(let type): sniffed = type
            case .failure(.empty): throw Problem.validation([.init(field: "body", message: "is empty: send the recording's bytes")])
            case .failure(.tooLarge): throw JournalHTTP.tooLarge
            case .failure(.notARecording):
                throw Self.unsupported(
                    "The bytes are not a recording this journal keeps (WebM/Opus, Ogg, MP3, MP4/AAC or WAV), whatever the file is called.")
            case .failure(.mismatch(let declared, let actual)):
                throw Self.unsupported(
                    "The bytes are \(actual.rawValue), not the \(declared.rawValue) the Content-Type says: send them as \(actual.rawValue)."
                )
            }
            try await store.putAudio(
                campus: campus.id, user: user, id: id, type: sniffed, bytes: bytes, quotas: MemberQuotas(campus: campus))
            return Response(status: .noContent, headers: [.cacheControl: "private, no-store"])
        }
        signedIn.get("me/journal/{id}/audio") { request, context -> Response in
            let (campus, user) = try Self.member(context)
            let id = try Self.entryID(context)
            guard let recording = try await store.recording(campus: campus.id, user: user, id: id) else {
                throw Problem.notFound("This entry has no recording of yours: PUT …/me/journal/{id}/audio adds one.")
            }
            return try JournalHTTP.ranged(recording, store: store, range: request.headers[.range], limiters: services.limiters)
        }
        signedIn.delete("me/journal/{id}/audio") { _, context -> Response in
            let (campus, user) = try Self.member(context)
            let id = try Self.entryID(context)
            guard try await store.deleteAudio(campus: campus.id, user: user, id: id) else {
                throw Problem.notFound("This entry has no recording of yours.")
            }
            return Response(status: .noContent, headers: [.cacheControl: "private, no-store"])
        }
    }

    /// The campus and the member whose own private data (journal, episodes, exports, links,
    /// keeping) a request reads or writes (an operator's session was refused before:
    /// `OwnDataMiddleware`).
    static func member(_ context: AttestRequestContext) throws -> (Campus, UserID) {
        (try context.requireCampus(), try context.requireSession().user.id)
    }

    static func entryID(_ context: AttestRequestContext) throws -> UUID {
        guard let text = context.parameters.get("id"), let id = UUID(uuidString: text) else {
            throw Problem(JournalError.notFound)
        }
        return id
    }

    static func `private`(_ body: some ResponseEncodable, _ request: Request, _ context: AttestRequestContext) throws -> Response {
        var response = try body.response(from: request, context: context)
        response.headers[.cacheControl] = "private, no-store"
        return response
    }

    static func unsupported(_ detail: String) -> Problem {
        Problem(.unsupportedMediaType, slug: "unsupported-media-type", title: "Unsupported recording", detail: detail)
    }

    /// The bytes whole (200), or the one range asked for (206), or 416 when it lies outside.
    /// `bytes=a-b`, `bytes=a-` and `bytes=-n`; anything else is answered whole, as RFC 9110 allows.
    /// The request's body, at most a recording's largest size, as one copy: the collected
    /// buffer is gone when this returns.
    static func recordingBytes(_ request: Request, _ context: AttestRequestContext) async throws -> Data {
        do {
            let buffer = try await request.collectBody(context: context, limit: AudioType.maxSize)
            return Data(buffer.readableBytesView)
        } catch let problem as Problem where problem.status == .contentTooLarge {
            throw JournalHTTP.tooLarge
        }
    }

}
