import AttestPostgres
import Synchronization

/// The verified sessions a server keeps, by the first 128 bits of their token's hash.
///
/// An open-addressing table (linear probing, at most 7/8 full): per slot a 16-byte key and
/// one reference, 24 bytes, where a `Dictionary` of the same entries, at most 3/4 full and
/// with the read instant beside each value, takes 32 bytes a bucket and up to twice the
/// buckets. A server keeps one session per member it saw within `ttl`, 100,000 and more, so
/// this is most of what it keeps in memory (see docs/performance.md, "Badges and sessions
/// kept in memory").
///
/// Entries are kept in two generations, with a second chance: every `period`, or once
/// `limit / 2` were stored, the table is rebuilt with the current generation and those of the
/// older one that were used since the last rebuild (`Session.reused`) or that hold something
/// kept with them (a badge), none older than `ttl`. So a session used again and
/// again stays (up to `ttl`), one whose member read their badge stays until its second read
/// (up to `ttl`: at home, then at the door), and one used once for nothing kept (a member's
/// daily submission) goes within two periods: memory follows the sessions in use, not every
/// session seen in the last `ttl`, and never exceeds `limit` entries.
final class SessionTable: Sendable {
    typealias Key = SessionStore.Key

    private struct Table {
        var keys: [Key]
        var values: [SessionStore.Session?]
        var count = 0

        init(capacity: Int) {
            keys = Array(repeating: Key(high: 0, low: 0), count: capacity)
            values = Array(repeating: nil, count: capacity)
        }

        var mask: Int { values.count - 1 }

        /// Keys are hashes already: their first word places them.
        func home(_ key: Key) -> Int { Int(truncatingIfNeeded: key.high) & mask }

        func slot(of key: Key) -> Int? {
            var index = home(key)
            while values[index] != nil {
                if keys[index] == key { return index }
                index = (index + 1) & mask
            }
            return nil
        }

        /// Stores `value` for `key`; the caller makes sure a slot is free.
        mutating func insert(_ value: SessionStore.Session, for key: Key) {
            var index = home(key)
            while values[index] != nil {
                if keys[index] == key {
                    values[index] = value
                    return
                }
                index = (index + 1) & mask
            }
            keys[index] = key
            values[index] = value
            count += 1
        }

        /// Empties the slot, moving back the entries after it that probed past it.
        mutating func remove(at slot: Int) {
            var hole = slot, next = slot
            while true {
                next = (next + 1) & mask
                guard values[next] != nil else { break }
                let home = home(keys[next])
                // The entry stays when its home lies cyclically after the hole, up to itself.
                let stays = hole <= next ? (hole < home && home <= next) : (hole < home || home <= next)
                if stays { continue }
                keys[hole] = keys[next]
                values[hole] = values[next]
                hole = next
            }
            values[hole] = nil
            count -= 1
        }

        /// The capacity for `count` entries: a power of two, at most 7/8 full.
        static func capacity(for count: Int) -> Int {
            var capacity = 16
            while capacity - capacity / 8 < count + 1 { capacity *= 2 }
            return capacity
        }
    }

    private struct State {
        var table = Table(capacity: 16)
        /// When the current generation began (nanoseconds on `SessionStore.clock`); sessions
        /// verified before it are the older generation.
        var currentSince: Int64 = .min
        var storedSince = 0
    }

    private let state = Mutex(State())
    let ttl: Int64
    let period: Int64
    let limit: Int

    init(ttl: Duration, period: Duration, limit: Int) {
        self.ttl = ttl.clampedNanoseconds
        self.period = period.clampedNanoseconds
        self.limit = limit
    }

    /// The session stored for `key`, verified less than `ttl` before `now`.
    func value(for key: Key, now: Int64) -> SessionStore.Session? {
        state.withLock { state in
            guard let slot = state.table.slot(of: key), let session = state.table.values[slot],
                SessionStore.elapsed(since: session.verifiedAt, until: now) < ttl
            else {
                return nil
            }
            session.markReused()
            return session
        }
    }

    func store(_ session: SessionStore.Session, for key: Key, now: Int64) {
        state.withLock { state in
            if SessionStore.elapsed(since: state.currentSince, until: now) >= period || state.storedSince >= max(limit / 2, 1) {
                // The older generation goes but for what was used since the last rebuild; the
                // current one becomes the older, and each kept session must be used again.
                let threshold = state.currentSince
                var kept = Table(capacity: Table.capacity(for: state.table.count))
                for (index, value) in state.table.values.enumerated() {
                    guard let value, SessionStore.elapsed(since: value.verifiedAt, until: now) < ttl else { continue }
                    if value.takeReused() || value.verifiedAt >= threshold || value.keepsSomething {
                        kept.insert(value, for: state.table.keys[index])
                    }
                }
                state.table = kept
                // From this session's verification on (its read may have begun a while ago).
                state.currentSince = min(now, session.verifiedAt)
                state.storedSince = 0
            }
            let slots = state.table.values.count
            if state.table.slot(of: key) == nil, state.table.count + 1 > slots - slots / 8 {
                var grown = Table(capacity: slots * 2)
                for (index, value) in state.table.values.enumerated() {
                    if let value { grown.insert(value, for: state.table.keys[index]) }
                }
                state.table = grown
            }
            state.table.insert(session, for: key)
            state.storedSince += 1
        }
    }

    func remove(_ key: Key) {
        state.withLock { state in
            if let slot = state.table.slot(of: key) { state.table.remove(at: slot) }
        }
    }

    /// How many sessions are held, stale ones included, and the table's slots (for tests).
    var counts: (entries: Int, slots: Int) { state.withLock { ($0.table.count, $0.table.values.count) } }
}
