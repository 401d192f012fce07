import AttestPlugins
import AttestPostgres
import ServiceLifecycle
import Synchronization

/// Each campus's sign-in generation, as this server last read it.
///
/// A sign-out, a role change and a renamed user move their campus's generation on in the same
/// transaction (`bump`), and every server reads all campuses' generations every `interval`
/// (`attest_auth_generations()`: their count and sum, and every row only when those moved).
/// A cache may then keep a verified session for as long as the generation it was verified
/// under stands: a change made on any server is seen by every other one within about
/// `interval`. When the generations could not be read for
/// `trustedFor`, `current` answers nil and caches fall back to their short time to live.
public final class AuthGenerations: Service, Sendable {
    private struct State {
        var generations: [CampusID: Int64] = [:]
        /// When the last successful read began (its snapshot is no older).
        var readAt: ContinuousClock.Instant?
        /// The campuses' count and the sum of their generations at the last full read.
        var fingerprint: [Int64] = []
    }

    private let state = Mutex(State())
    let client: PostgresClient
    public let interval: Duration
    public let trustedFor: Duration

    public init(client: PostgresClient, interval: Duration = .seconds(1), trustedFor: Duration = .seconds(3)) {
        self.client = client
        self.interval = interval
        self.trustedFor = trustedFor
    }

    /// The campus's generation as read less than `trustedFor` ago; nil when there is no such
    /// read (the poll has not run or keeps failing) or the campus was not in it.
    public func current(_ campus: CampusID) -> Int64? {
        state.withLock { state in
            guard let readAt = state.readAt, ContinuousClock.now - readAt < trustedFor else { return nil }
            return state.generations[campus]
        }
    }

    /// Reads every campus's generation now: first their count and sum, one row whatever the
    /// number of campuses, and every campus's only when those changed (a generation only
    /// grows, so any change moves the sum).
    public func refresh() async throws {
        let started = ContinuousClock.now
        let summary = try await client.query(
            "SELECT count(*)::int8 AS campuses, coalesce(sum(generation), 0)::int8 AS total FROM attest_auth_generations()")
        let fingerprint = [
            try summary.first?.decode("campuses", as: Int64.self) ?? 0, try summary.first?.decode("total", as: Int64.self) ?? 0,
        ]
        let unchanged = state.withLock { state in
            guard state.fingerprint == fingerprint else { return false }
            state.readAt = started
            return true
        }
        if unchanged { return }
        let rows = try await client.query("SELECT campus_id, generation FROM attest_auth_generations()")
        var generations: [CampusID: Int64] = [:]
        generations.reserveCapacity(rows.count)
        for row in rows {
            generations[CampusID(try row.decode("campus_id"))] = try row.decode("generation", as: Int64.self)
        }
        state.withLock { state in
            state.generations = generations
            // Read with the first statement's count and sum: a change between the two reads
            // shows as a changed sum at the next refresh, which reads every campus again.
            state.fingerprint = fingerprint
            state.readAt = started
        }
    }

    /// Reads the generations every `interval` until the server stops. A failed read is
    /// retried at the next tick; meanwhile `current` stops answering after `trustedFor`.
    public func run() async throws {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            try? await refresh()
            try? await Task.sleep(for: interval)
        }
    }

    /// Moves the campus's generation on: part of the transaction that signs out, changes a
    /// role or renames, so that no server reads the new generation before the change.
    public static func bump(_ connection: PostgresConnection, campus: CampusID) async throws {
        try await connection.query("UPDATE campuses SET auth_generation = auth_generation + 1 WHERE id = \(campus)")
    }
}

extension AuthGenerations {
    /// Moves this server's copy of the campus's generation on after a committed `bump`, so
    /// that what this server keeps is verified again at once rather than after the next poll
    /// (the poll then reads the database's own value).
    public func advance(_ campus: CampusID) {
        state.withLock { state in
            if let generation = state.generations[campus] { state.generations[campus] = generation + 1 }
        }
    }
}
