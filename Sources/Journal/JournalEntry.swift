import AttestPlugins
import Foundation

/// What an entry is about, for filtering and export.
public enum JournalTag: String, Sendable, CaseIterable, Codable {
    case symptom, treatment, quarantine, contact, place
}

/// One entry of a member's private journal.
public struct JournalEntry: Sendable, Equatable {
    public var id: UUID
    public var date: LocalDate
    public var title: String
    public var text: String
    public var tags: [JournalTag]
    /// The recording's type and size in bytes, when there is one.
    public var audio: (type: AudioType, size: Int)?
    public var createdAt: Date
    public var updatedAt: Date

    public static func == (a: JournalEntry, b: JournalEntry) -> Bool {
        a.id == b.id && a.date == b.date && a.title == b.title && a.text == b.text && a.tags == b.tags
            && a.audio?.type == b.audio?.type && a.audio?.size == b.audio?.size && a.createdAt == b.createdAt && a.updatedAt == b.updatedAt
    }
}

/// What a member writes: every field, checked together.
public struct JournalDraft: Sendable, Equatable {
    public var date: LocalDate
    public var title: String
    public var text: String
    public var tags: [JournalTag]

    public init(date: LocalDate, title: String, text: String, tags: [JournalTag] = []) {
        self.date = date
        self.title = title
        self.text = text
        self.tags = tags
    }

    public static let maxTitle = 200
    public static let maxText = 10_000
    /// The same in UTF-8 bytes: four a character, the most a scalar takes.
    public static let maxTitleBytes = 800
    public static let maxTextBytes = 40_000

    /// What is wrong with it, field by field (empty: nothing).
    public func problems(today: LocalDate) -> [(field: String, message: String)] {
        var problems: [(String, String)] = []
        if let problem = TextLimit.problem(title, characters: Self.maxTitle, bytes: Self.maxTitleBytes) {
            problems.append(("title", problem))
        } else if title.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
            problems.append(("title", "must be 1 to \(Self.maxTitle) characters"))
        }
        if let problem = TextLimit.problem(text, characters: Self.maxText, bytes: Self.maxTextBytes) { problems.append(("text", problem)) }
        if date > today.adding(days: 1) || date < LocalDate(year: 2000, month: 1, day: 1) {
            problems.append(("date", "must be a date from 2000-01-01 to tomorrow (\(today.adding(days: 1)))"))
        }
        if Set(tags).count != tags.count { problems.append(("tags", "must not repeat a tag")) }
        return problems
    }
}

/// The recordings an entry may hold, as their first bytes show them (never their name or
/// the type a client claims).
public enum AudioType: String, Sendable, CaseIterable {
    case webm = "audio/webm"
    case ogg = "audio/ogg"
    case mpeg = "audio/mpeg"
    case mp4 = "audio/mp4"
    case wav = "audio/wav"

    /// The most an entry's recording may hold: 5 MB.
    public static let maxSize = 5 * 1024 * 1024

    /// The type `bytes` begin as, or nil: WebM (EBML), Ogg (`OggS`), MP3 (an ID3 tag or an
    /// MPEG audio frame), MP4/AAC (`ftyp` at byte 4) or WAV (`RIFF` … `WAVE`).
    public static func sniff(_ bytes: some Collection<UInt8>) -> AudioType? {
        let head = Array(bytes.prefix(16))
        func starts(_ prefix: [UInt8], at offset: Int = 0) -> Bool {
            head.count >= offset + prefix.count && Array(head[offset..<offset + prefix.count]) == prefix
        }
        if starts([0x1A, 0x45, 0xDF, 0xA3]) { return .webm }
        if starts(Array("OggS".utf8)) { return .ogg }
        if starts(Array("RIFF".utf8)), starts(Array("WAVE".utf8), at: 8) { return .wav }
        if starts(Array("ftyp".utf8), at: 4) { return .mp4 }
        if starts(Array("ID3".utf8)) { return .mpeg }
        // An MPEG audio frame header: 11 sync bits, a valid version and layer.
        if head.count >= 2, head[0] == 0xFF, head[1] & 0xE0 == 0xE0, head[1] & 0x18 != 0x08, head[1] & 0x06 != 0 { return .mpeg }
        return nil
    }

    /// Why bytes cannot be kept as a recording.
    public enum Refusal: Error, Equatable {
        case empty
        case tooLarge
        /// Not one of the types kept, whatever the file is called.
        case notARecording
        /// The bytes are `actual`, not the `declared` type they were sent as (a renamed file).
        case mismatch(declared: AudioType, actual: AudioType)
    }

    /// The type of a recording read from its bytes, checked against the type it was sent as
    /// (`declared`; nil when the sender named no audio type, as a browser may for an upload).
    public static func check(_ bytes: Data, declared: AudioType?) -> Result<AudioType, Refusal> {
        guard !bytes.isEmpty else { return .failure(.empty) }
        guard bytes.count <= maxSize else { return .failure(.tooLarge) }
        guard let actual = sniff(bytes) else { return .failure(.notARecording) }
        if let declared, declared != actual { return .failure(.mismatch(declared: declared, actual: actual)) }
        return .success(actual)
    }

    /// A Content-Type a client sent, without parameters (`audio/webm;codecs=opus` → webm);
    /// `audio/x-wav`, `audio/mp3` and `video/webm` name the same types.
    public static func named(_ contentType: String) -> AudioType? {
        let bare = contentType.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
        switch bare {
        case "audio/webm", "video/webm": return .webm
        case "audio/ogg", "audio/opus", "application/ogg": return .ogg
        case "audio/mpeg", "audio/mp3": return .mpeg
        case "audio/mp4", "audio/aac", "audio/x-m4a", "audio/m4a", "video/mp4": return .mp4
        case "audio/wav", "audio/x-wav", "audio/wave", "audio/vnd.wave": return .wav
        default: return nil
        }
    }
}

/// Why a journal request cannot be done; each says how to mend it.
public enum JournalError: Error, Equatable, CustomStringConvertible {
    case notFound
    /// The server has no key-encryption key, so nothing private can be stored or read.
    case sealingUnavailable
    case invalid([String: String])

    public var description: String {
        switch self {
        case .notFound: "no such journal entry of yours: GET …/me/journal lists them"
        case .sealingUnavailable:
            "the journal is unavailable: the server has no key-encryption key to seal entries with (an operator passes --kek-file)"
        case .invalid(let problems): problems.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: "; ")
        }
    }
}
