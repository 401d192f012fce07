import AttestFoundation
import AttestPlugins
import Foundation
import HTTPTypes
import Hummingbird
import Identity
import Journal
import NIOCore
import Surveys
import Tenancy

/// What the API and the pages both read and answer of a member's journal: an entry's fields,
/// a recording's bytes by range, the upload limits.
package enum JournalHTTP {
    /// An entry's JSON may be long: 10,000 characters written as `\uXXXX` pairs take 120 KB.
    package static let bodyLimit = 256 * 1024

    package static let tooLarge = Problem(
        .contentTooLarge, slug: "body-too-large", title: "Recording too large",
        detail: "A recording may hold at most 5 MB (5242880 bytes). Record a shorter one, or at a lower bit rate.")

    /// The fields of a POST (every one but `date` and `tags` required) or a PATCH (`base`
    /// holds the entry; only the fields given change). Every problem is named at once.
    package static func draft(from body: [String: JSONValue], base: JournalDraft?, today: LocalDate) throws -> JournalDraft {
        var reader = ObjectReader(
            body, fields: ["date", "title", "text", "tags"], unknown: "is not a field of a journal entry (date, title, text, tags)")
        var draft = base ?? JournalDraft(date: today, title: "", text: "", tags: [])
        if let date = reader.date("date") { draft.date = date }
        if let title = reader.text("title", required: base == nil ? "1 to \(JournalDraft.maxTitle) characters" : nil) {
            draft.title = title
        }
        if let text = reader.text("text") { draft.text = text }
        let names = JournalTag.allCases.map(\.rawValue).joined(separator: ", ")
        let tags: [JournalTag]? = reader.value("tags", wrong: "must be a list of \(names)") { value in
            guard case .array(let items) = value else { return nil }
            var tags: [JournalTag] = []
            for item in items {
                guard case .string(let name) = item, let tag = JournalTag(rawValue: name) else { return nil }
                tags.append(tag)
            }
            return tags
        }
        if let tags { draft.tags = tags }
        reader.add(draft.problems(today: today))
        try reader.finish()
        return draft
    }

    /// The recording, or the one range `header` asks for, streamed: only the chunks the
    /// range covers are read and opened, a batch at a time.
    package static func ranged(_ recording: StoredRecording, store: JournalStore, range header: String?, limiters: RequestLimiters) throws
        -> Response
    {
        var headers: HTTPFields = [.contentType: recording.type.rawValue, .acceptRanges: "bytes", .cacheControl: "private, no-store"]
        let count = recording.size
        func body(from first: Int, through last: Int) throws -> ResponseBody {
            try limiters.admitRecording(campus: recording.campus, member: recording.user, bytes: last - first + 1)
            return ResponseBody(contentLength: last - first + 1) { writer in
                try await store.read(recording, from: first, through: last) { bytes in try await writer.write(ByteBuffer(bytes: bytes)) }
                try await writer.finish(nil)
            }
        }
        guard let header, let range = byteRange(header, count: count) else {
            return Response(status: .ok, headers: headers, body: try body(from: 0, through: count - 1))
        }
        guard let (start, end) = range else {
            headers[.contentRange] = "bytes */\(count)"
            throw Problem(
                .rangeNotSatisfiable, slug: "range-not-satisfiable", title: "Range not satisfiable",
                detail: "The recording has \(count) bytes; ask for a range within them.", headers: [.contentRange: "bytes */\(count)"])
        }
        headers[.contentRange] = "bytes \(start)-\(end)/\(count)"
        return Response(status: .partialContent, headers: headers, body: try body(from: start, through: end))
    }

    /// nil: not a single byte range this reads (answer whole); `.some(nil)`: unsatisfiable;
    /// else the first and last byte, inclusive.
    package static func byteRange(_ header: String, count: Int) -> (Int, Int)?? {
        guard header.hasPrefix("bytes="), !header.contains(",") else { return nil }
        let spec = header.dropFirst(6).trimmingCharacters(in: .whitespaces)
        let parts = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].utf8.count <= 18, parts[1].utf8.count <= 18 else { return nil }
        let first = parts[0].isEmpty ? nil : Int(parts[0]), last = parts[1].isEmpty ? nil : Int(parts[1])
        if !parts[0].isEmpty && first == nil || !parts[1].isEmpty && last == nil { return nil }
        switch (first, last) {
        case (let start?, let end?):
            guard start <= end else { return nil }
            guard start < count else { return .some(nil) }
            return .some((start, min(end, count - 1)))
        case (let start?, nil):
            guard start < count else { return .some(nil) }
            return .some((start, count - 1))
        case (nil, let suffix?):
            guard suffix > 0, count > 0 else { return .some(nil) }
            return .some((max(0, count - suffix), count - 1))
        case (nil, nil):
            return nil
        }
    }
}
