import AttestPlugins
import AttestPostgres
import Crypto
import Foundation
import Tenancy

/// A recording sealed in fixed-size chunks, in the manner of STREAM (Hoang, Reyhanitabar,
/// Rogaway, Vizár): one random data key per recording, itself a `SealedSecret` envelope under
/// the key-encryption key (`journal_audio.data_key`, the only thing `rotate-kek` re-wraps);
/// each 64 KiB chunk its own AES-GCM seal whose nonce is the chunk's index and a flag for the
/// last one, authenticating the recording it belongs to. A chunk moved to another index, to
/// another recording, or a recording cut short, does not open. A `Range` opens only the chunks
/// it covers, and an upload or a download holds a batch of chunks at a time, never the whole.
enum RecordingChunks {
    static let size = 64 * 1024
    /// Chunks a statement writes or reads: a megabyte.
    static let batch = 16

    /// The nonce of chunk `index`: seven zero bytes, the index (big-endian), 1 for the last
    /// chunk else 0. The data key is new for every recording, so no nonce repeats under it.
    static func nonce(_ index: Int, last: Bool) throws -> AES.GCM.Nonce {
        var bytes = [UInt8](repeating: 0, count: 12)
        let value = UInt32(truncatingIfNeeded: index)
        bytes[7] = UInt8(truncatingIfNeeded: value >> 24)
        bytes[8] = UInt8(truncatingIfNeeded: value >> 16)
        bytes[9] = UInt8(truncatingIfNeeded: value >> 8)
        bytes[10] = UInt8(truncatingIfNeeded: value)
        bytes[11] = last ? 1 : 0
        return try AES.GCM.Nonce(data: bytes)
    }

    static func count(size: Int) -> Int { max(1, (size + Self.size - 1) / Self.size) }

    static func seal(_ chunk: some DataProtocol, index: Int, last: Bool, key: SymmetricKey, context: String) throws -> Data {
        let box = try AES.GCM.seal(chunk, using: key, nonce: try nonce(index, last: last), authenticating: Data(context.utf8))
        return box.ciphertext + box.tag
    }

    static func open(_ sealed: Data, index: Int, last: Bool, key: SymmetricKey, context: String) throws -> Data {
        guard sealed.count >= 16 else { throw CampusError.sealedSecretDamaged }
        do {
            let box = try AES.GCM.SealedBox(nonce: try nonce(index, last: last), ciphertext: sealed.dropLast(16), tag: sealed.suffix(16))
            return try AES.GCM.open(box, using: key, authenticating: Data(context.utf8))
        } catch {
            throw CampusError.sealedSecretDamaged
        }
    }
}

/// An entry's recording as stored: what it is, and how to open it.
public struct StoredRecording: Sendable {
    public let type: AudioType
    public let size: Int
    public let campus: CampusID
    public let user: UserID
    public let entry: UUID
    /// Chunked: the opened data key. A recording kept before chunks is one envelope, opened whole.
    let key: SymmetricKey?
    let whole: Data?
}

/// A recording on its way in: its bytes, and the new data key its chunks are sealed with as
/// they are written, a batch at a time (never all at once beside the bytes).
struct IncomingRecording {
    let bytes: Data
    let dataKey: SymmetricKey
    /// The data key sealed under the key-encryption key.
    let envelope: Data
    let context: String

    var count: Int { RecordingChunks.count(size: bytes.count) }

    /// Chunks `range`, sealed.
    func sealed(_ range: Range<Int>) throws -> [Data] {
        try range.map { index in
            let start = bytes.startIndex + index * RecordingChunks.size
            let piece = bytes[start..<min(bytes.endIndex, start + RecordingChunks.size)]
            return try RecordingChunks.seal(piece, index: index, last: index == count - 1, key: dataKey, context: context)
        }
    }
}

extension JournalStore {
    /// `bytes` as a recording to keep, with a data key of its own.
    func incomingRecording(_ bytes: Data, campus: CampusID, user: UserID, id: UUID) throws -> IncomingRecording {
        let dataKey = SymmetricKey(size: .bits256)
        let context = Self.context(campus, user, id, "audio")
        let envelope = try SealedSecret.seal(dataKey.withUnsafeBytes { Data($0) }, under: try requireKEK(), context: context)
        return IncomingRecording(bytes: bytes, dataKey: dataKey, envelope: envelope, context: context)
    }

    /// Inserts or replaces the recording of the member's entry `id` inside the caller's
    /// transaction, its chunks a batch a statement; 0 when there is no such entry. Refuses a
    /// recording that would take the member's recordings past `quotas.recordingBytes`.
    func storeRecording(
        _ connection: PostgresConnection, campus: CampusID, user: UserID, id: UUID, type: AudioType, recording: IncomingRecording,
        quotas: MemberQuotas
    ) async throws -> Int {
        let size = recording.bytes.count
        let kept: Int =
            try await connection.query(
                """
                SELECT coalesce(sum(size), 0)::int8 AS kept FROM journal_audio
                WHERE campus_id = \(campus) AND user_id = \(user.rawValue) AND entry_id <> \(id)
                """
            ).first?.decode("kept") ?? 0
        guard kept + size <= quotas.recordingBytes else {
            throw MemberQuotas.Exceeded.recordingBytes(limit: quotas.recordingBytes, kept: kept)
        }
        let stored = try await connection.query(
            """
            INSERT INTO journal_audio (campus_id, user_id, entry_id, content_type, size, sealed, data_key)
            SELECT campus_id, user_id, id, \(type.rawValue), \(Int32(clamping: size)), NULL, \(recording.envelope) FROM journal_entries
            WHERE campus_id = \(campus) AND user_id = \(user.rawValue) AND id = \(id)
            ON CONFLICT (campus_id, user_id, entry_id) DO UPDATE
                SET content_type = EXCLUDED.content_type, size = EXCLUDED.size, sealed = NULL, data_key = EXCLUDED.data_key, created_at = now()
            """
        ).affectedRows
        guard stored == 1 else { return stored }
        try await connection.query(
            "DELETE FROM journal_audio_chunks WHERE campus_id = \(campus) AND user_id = \(user.rawValue) AND entry_id = \(id)")
        for start in stride(from: 0, to: recording.count, by: RecordingChunks.batch) {
            let end = min(recording.count, start + RecordingChunks.batch)
            try await connection.query(
                """
                INSERT INTO journal_audio_chunks (campus_id, user_id, entry_id, chunk, sealed)
                SELECT \(campus), \(user.rawValue), \(id), c.chunk, c.sealed
                FROM unnest(\((start..<end).map { Int32(truncatingIfNeeded: $0) }), \(try recording.sealed(start..<end))) AS c(chunk, sealed)
                """)
        }
        return stored
    }

    /// The entry's recording (its type, size and key), or nil.
    public func recording(campus: CampusID, user: UserID, id: UUID) async throws -> StoredRecording? {
        let rows = try await transaction(campus: campus, user: user) { connection in
            try await connection.query(
                """
                SELECT content_type, size, sealed, data_key FROM journal_audio
                WHERE campus_id = \(campus) AND user_id = \(user.rawValue) AND entry_id = \(id)
                """)
        }
        guard let row = rows.first, let type = AudioType(rawValue: try row.decode("content_type")) else { return nil }
        let context = Self.context(campus, user, id, "audio")
        let size = Int(try row.decode("size", as: Int32.self))
        if let envelope = try row.decode("data_key", as: Data?.self) {
            let key = SymmetricKey(data: try SealedSecret.open(envelope, with: try requireKEK(), context: context))
            return StoredRecording(type: type, size: size, campus: campus, user: user, entry: id, key: key, whole: nil)
        }
        let whole = try SealedSecret.open(try row.decode("sealed", as: Data.self), with: try requireKEK(), context: context)
        return StoredRecording(type: type, size: whole.count, campus: campus, user: user, entry: id, key: nil, whole: whole)
    }

    /// The bytes `first` through `last` (inclusive) of `recording`, handed to `sink` a batch of
    /// chunks at a time: only the chunks the range covers are read and opened.
    public func read(
        _ recording: StoredRecording, from first: Int, through last: Int, into sink: (_ bytes: Data) async throws -> Void
    ) async throws {
        guard first <= last, first >= 0, last < recording.size else { return }
        if let whole = recording.whole { return try await sink(whole[whole.startIndex + first...whole.startIndex + last]) }
        guard let key = recording.key else { throw CampusError.sealedSecretDamaged }
        let context = Self.context(recording.campus, recording.user, recording.entry, "audio")
        let count = RecordingChunks.count(size: recording.size)
        let (firstChunk, lastChunk) = (first / RecordingChunks.size, last / RecordingChunks.size)
        for start in stride(from: firstChunk, through: lastChunk, by: RecordingChunks.batch) {
            let end = min(lastChunk, start + RecordingChunks.batch - 1)
            let rows = try await transaction(campus: recording.campus, user: recording.user) { connection in
                try await connection.query(
                    """
                    SELECT chunk, sealed FROM journal_audio_chunks
                    WHERE campus_id = \(recording.campus) AND user_id = \(recording.user.rawValue) AND entry_id = \(recording.entry)
                      AND chunk BETWEEN \(Int32(truncatingIfNeeded: start)) AND \(Int32(truncatingIfNeeded: end))
                    ORDER BY chunk
                    """)
            }
            guard rows.count == end - start + 1 else { throw CampusError.sealedSecretDamaged }
            for (offset, row) in rows.enumerated() {
                let index = start + offset
                guard Int(try row.decode("chunk", as: Int32.self)) == index else { throw CampusError.sealedSecretDamaged }
                let plain = try RecordingChunks.open(
                    try row.decode("sealed", as: Data.self), index: index, last: index == count - 1, key: key, context: context)
                // The part of this chunk inside the range.
                let chunkStart = index * RecordingChunks.size
                let from = max(first, chunkStart) - chunkStart, through = min(last, chunkStart + plain.count - 1) - chunkStart
                guard from <= through, through < plain.count else { throw CampusError.sealedSecretDamaged }
                try await sink(plain[plain.startIndex + from...plain.startIndex + through])
            }
        }
    }

    /// The whole recording in memory (tests, and what is small).
    public func audio(campus: CampusID, user: UserID, id: UUID) async throws -> (type: AudioType, bytes: Data)? {
        guard let recording = try await recording(campus: campus, user: user, id: id) else { return nil }
        var bytes = Data()
        bytes.reserveCapacity(recording.size)
        try await read(recording, from: 0, through: recording.size - 1) { bytes += $0 }
        return (recording.type, bytes)
    }
}
