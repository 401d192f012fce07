import AttestPlugins
import AttestServer
import Foundation
import Hummingbird
import Journal
import Tenancy

/// The member's private journal: `/c/{campus}/journal` (a new entry, then the entries newest
/// first) and `/c/{campus}/journal/{id}` (the entry, its recording, edit and delete). The
/// form is `multipart/form-data` so a recording rides with it; `record.js` fills its file
/// input from the microphone where the browser has `MediaRecorder`. The member's own entries
/// only, through the same store and the same checks as `…/me/journal`.
struct JournalPages: Sendable {
    let web: WebRoutes
    var services: AttestServices { web.services }
    var store: JournalStore { services.journal }

    /// An entry's fields and a recording: the API's two limits together.
    static let uploadLimit = AudioType.maxSize + JournalHTTP.bodyLimit

    func register(on pages: RouterGroup<AttestRequestContext>) {
        pages.get("journal") { request, context -> Response in
            let visit = try await web.visit(request, context)
            let today = visit.campus.localDate(at: services.clock())
            return try await journalPage(visit: visit, request: request, values: Values(date: today.description))
        }
        pages.post("journal") { request, context -> Response in
            let visit = try await web.visit(request, context)
            let form = try await Self.readForm(request, context, visit: visit)
            try web.checkCSRF(request, form: form, visit: visit)
            let user = try visit.privateUser().id
            let (values, draft, audio, errors) = try read(form, base: nil, visit: visit)
            guard let draft, errors.isEmpty else {
                return try await journalPage(visit: visit, request: request, values: values, errors: errors, status: .unprocessableContent)
            }
            let entry = try await store.create(
                campus: visit.campus.id, user: user, draft, audio: audio, at: services.clock(),
                quotas: MemberQuotas(campus: visit.campus))
            throw WebOutcome.redirect(visit.base + "journal/\(entry.id.lowercasedText)?saved=1")
        }
        pages.get("journal/:id") { request, context -> Response in
            let (visit, entry) = try await find(request, context)
            return try entryPage(
                entry, visit: visit, values: Values(entry), notice: visit.path.hasSuffix("?saved=1") ? visit["entrySaved"] : nil)
        }
        pages.post("journal/:id") { request, context -> Response in
            let (visit, entry) = try await find(request, context)
            let form = try await Self.readForm(request, context, visit: visit)
            try web.checkCSRF(request, form: form, visit: visit)
            let base = JournalDraft(date: entry.date, title: entry.title, text: entry.text, tags: entry.tags)
            let (values, draft, audio, errors) = try read(form, base: base, visit: visit)
            guard let draft, errors.isEmpty else {
                return try entryPage(entry, visit: visit, values: values, errors: errors, status: .unprocessableContent)
            }
            let user = try visit.privateUser().id
            _ = try await store.update(
                campus: visit.campus.id, user: user, id: entry.id, draft, audio: audio, at: services.clock(),
                quotas: MemberQuotas(campus: visit.campus))
            throw WebOutcome.redirect(visit.base + "journal/\(entry.id.lowercasedText)?saved=1")
        }
        pages.post("journal/:id/delete") { request, context -> Response in
            let (visit, entry) = try await find(request, context)
            try web.checkCSRF(request, form: try await WebForm.read(request, context: context), visit: visit)
            let user = try visit.privateUser().id
            _ = try await store.delete(campus: visit.campus.id, user: user, id: entry.id)
            throw WebOutcome.redirect(visit.base + "journal?deleted=1")
        }
        pages.post("journal/:id/audio/delete") { request, context -> Response in
            let (visit, entry) = try await find(request, context)
            try web.checkCSRF(request, form: try await WebForm.read(request, context: context), visit: visit)
            let user = try visit.privateUser().id
            _ = try await store.deleteAudio(campus: visit.campus.id, user: user, id: entry.id)
            throw WebOutcome.redirect(visit.base + "journal/\(entry.id.lowercasedText)?saved=1")
        }
        // The recording for the page's <audio> element, with ranges (the cookie's session).
        pages.get("journal/:id/audio") { request, context -> Response in
            let visit = try await web.visit(request, context)
            let user = try visit.privateUser().id
            guard let text = context.parameters.get("id"), let id = UUID(uuidString: text),
                let recording = try await store.recording(campus: visit.campus.id, user: user, id: id)
            else { throw Problem.notFound(visit["entryNoRecording"]) }
            return try JournalHTTP.ranged(recording, store: store, range: request.headers[.range], limiters: services.limiters)
        }
    }

    /// The entry form, up to a recording's size; past it, the page's 413 saying so.
    static func readForm(_ request: Request, _ context: AttestRequestContext, visit: WebVisit) async throws -> WebForm {
        do {
            return try await WebForm.read(request, context: context, limit: uploadLimit)
        } catch let problem as Problem where problem.status == .contentTooLarge {
            throw Problem(.contentTooLarge, slug: "recording-too-large", title: visit["tooLargeTitle"], detail: visit["audioTooLarge"])
        }
    }

    /// The signed-in member's entry named in the path; another's, or none, is the 404 page.
    private func find(_ request: Request, _ context: AttestRequestContext) async throws -> (WebVisit, JournalEntry) {
        let visit = try await web.visit(request, context)
        let user = try visit.privateUser().id
        guard let text = context.parameters.get("id"), let id = UUID(uuidString: text),
            let entry = try await store.find(campus: visit.campus.id, user: user, id: id)
        else { throw Problem.notFound(visit["entryNotFound"]) }
        return (visit, entry)
    }

    // MARK: The form

    /// What the form shows: the member's words as typed, even when they are not yet valid.
    struct Values {
        var date: String
        var title = ""
        var text = ""
        var tags: Set<String> = []

        init(date: String) { self.date = date }

        init(_ entry: JournalEntry) {
            date = entry.date.description
            title = entry.title
            text = entry.text
            tags = Set(entry.tags.map(\.rawValue))
        }
    }

    /// The form read and checked as the API checks a journal body (`JournalHTTP.draft`),
    /// with the recording checked from its bytes; every problem in the member's words.
    private func read(
        _ form: WebForm, base: JournalDraft?, visit: WebVisit
    ) throws -> (Values, JournalDraft?, JournalStore.Recording?, FormErrors) {
        var values = Values(date: (form["date"] ?? "").trimmingCharacters(in: .whitespaces))
        values.title = form["title"] ?? ""
        values.text = (form["text"] ?? "").replacingOccurrences(of: "\r\n", with: "\n")
        let tags = form.all("tag")
        values.tags = Set(tags)
        let today = visit.campus.localDate(at: services.clock())
        let body: [String: JSONValue] = [
            "date": .string(values.date), "title": .string(values.title), "text": .string(values.text),
            "tags": .array(tags.map(JSONValue.string)),
        ]
        var errors = FormErrors()
        var draft: JournalDraft?
        do {
            draft = try JournalHTTP.draft(from: body, base: base, today: today)
        } catch let problem as Problem where problem.status == .unprocessableContent {
            // The order of the form, whatever order the check found them in.
            for field in ["date", "title", "text", "tags"] where problem.errors.contains(where: { $0.field == field }) {
                switch field {
                case "date": errors.add(field, anchor: "entry-date", visit.format("entryDateError", today.adding(days: 1).description))
                case "title": errors.add(field, anchor: "entry-title", visit.format("entryTitleError", "\(JournalDraft.maxTitle)"))
                case "text":
                    errors.add(
                        field, anchor: "entry-text",
                        visit.format(
                            "entryTextError", WebFormat.count(JournalDraft.maxText, visit: visit),
                            WebFormat.count(values.text.count, visit: visit)))
                default: errors.add(field, anchor: "entry-tag-\(JournalTag.allCases[0].rawValue)", visit["entryTagsError"])
                }
            }
        }
        var audio: JournalStore.Recording?
        if let file = form.file("audio") {
            // A browser names an upload's type from its file name, or not at all.
            let declared = file.contentType.flatMap(AudioType.named)
            switch AudioType.check(file.body, declared: declared) {
            case .success(let type): audio = (type, file.body)
            case .failure(.tooLarge): errors.add("audio", anchor: "entry-audio", visit["audioTooLarge"])
            case .failure(.mismatch(let declared, let actual)):
                errors.add("audio", anchor: "entry-audio", visit.format("audioMismatch", Self.word(declared), Self.word(actual)))
            case .failure(.notARecording), .failure(.empty): errors.add("audio", anchor: "entry-audio", visit["audioNotRecording"])
            }
        }
        return (values, errors.isEmpty ? draft : nil, audio, errors)
    }

    static func word(_ type: AudioType) -> String {
        switch type {
        case .webm: "WebM"
        case .ogg: "Ogg"
        case .mpeg: "MP3"
        case .mp4: "MP4/AAC"
        case .wav: "WAV"
        }
    }

    private func formData(_ values: Values, errors: FormErrors, action: String, submit: String, visit: WebVisit, hasAudio: Bool) -> [String:
        Any]
    {
        var data: [String: Any] = [
            "action": action, "submit": submit,
            "date": errors.field("date", value: values.date), "title": errors.field("title", value: values.title),
            "text": errors.field("text", value: values.text), "audio": errors.field("audio", value: ""),
            "tags": JournalTag.allCases.map { tag -> [String: Any] in
                [
                    "value": tag.rawValue, "label": visit["tag-" + tag.rawValue], "checked": values.tags.contains(tag.rawValue),
                    "id": "entry-tag-\(tag.rawValue)",
                ]
            },
            "audioLabel": visit[hasAudio ? "entryAudioReplace" : "entryAudio"],
            "textHint": visit.format("textHint", WebFormat.count(JournalDraft.maxText, visit: visit)),
        ]
        if let message = errors["tags"] { data["tagsError"] = message }
        return data
    }

    // MARK: The pages

    private func journalPage(
        visit: WebVisit, request: Request, values: Values, errors: FormErrors = FormErrors(), status: HTTPResponse.Status = .ok
    ) async throws -> Response {
        let user = try visit.privateUser().id
        let cursorText = request.uri.queryParameters.get("cursor").map { String($0) }
        let cursor = cursorText.flatMap { JournalStore.Cursor(text: $0) }
        let page = try await store.list(campus: visit.campus.id, user: user, after: cursor, limit: 20)
        var data: [String: Any] = [
            "form": formData(
                values, errors: errors, action: visit.base + "journal", submit: visit["saveEntry"], visit: visit, hasAudio: false),
            "hasEntries": !page.entries.isEmpty,
            "entries": page.entries.map { entry -> [String: Any] in
                var item: [String: Any] = [
                    "href": visit.base + "journal/\(entry.id.lowercasedText)", "title": entry.title,
                    "dateText": WebFormat.date(entry.date, campus: visit.campus, language: visit.language),
                    "tags": entry.tags.map { visit["tag-" + $0.rawValue] }.joined(separator: ", "),
                    "excerpt": Self.excerpt(entry.text),
                ]
                if entry.audio != nil { item["hasAudio"] = true }
                return item.droppingEmptyText()
            },
        ]
        errors.summary(into: &data)
        if let next = page.next { data["olderHref"] = visit.base + "journal?cursor=\(next.text)" }
        if cursorText != nil { data["newerHref"] = visit.base + "journal" }
        if request.uri.queryParameters.get("deleted") == "1" { data["notice"] = visit["entryDeleted"] }
        return try web.renderer.render(
            .init(
                template: "journal", title: errors.title(visit["journalTitle"], visit: visit), data: data, status: status,
                scripts: ["record.js"], current: "journal"),
            visit: visit)
    }

    private func entryPage(
        _ entry: JournalEntry, visit: WebVisit, values: Values, errors: FormErrors = FormErrors(), notice: String? = nil,
        status: HTTPResponse.Status = .ok
    ) throws -> Response {
        let href = visit.base + "journal/\(entry.id.lowercasedText)"
        var data: [String: Any] = [
            "title": entry.title, "dateText": WebFormat.date(entry.date, campus: visit.campus, language: visit.language),
            "tags": entry.tags.map { visit["tag-" + $0.rawValue] }.joined(separator: ", "), "text": entry.text,
            "updatedText": WebFormat.dateTime(entry.updatedAt, campus: visit.campus, language: visit.language),
            "deleteAction": href + "/delete",
            "form": formData(
                values, errors: errors, action: href, submit: visit["saveChanges"], visit: visit, hasAudio: entry.audio != nil),
            "editOpen": !errors.isEmpty,
        ]
        if let audio = entry.audio {
            data["audio"] = [
                "src": href + "/audio", "type": audio.type.rawValue, "deleteAction": href + "/audio/delete",
                "label": visit.format("recordingOf", Self.word(audio.type), WebFormat.bytes(audio.size)),
            ]
        }
        if let notice { data["notice"] = notice }
        errors.summary(into: &data)
        return try web.renderer.render(
            .init(
                template: "entry", title: errors.title(entry.title, visit: visit), data: data.droppingEmptyText(), status: status,
                scripts: ["record.js"], current: "journal"),
            visit: visit)
    }

    /// The start of an entry's text on one line, for the list.
    static func excerpt(_ text: String) -> String {
        let line = text.split(whereSeparator: \.isNewline).joined(separator: " ")
        return line.count > 140 ? String(line.prefix(139)) + "…" : line
    }
}
