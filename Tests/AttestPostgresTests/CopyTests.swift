import AttestPostgres
import Foundation
import Testing

@Suite("Binary COPY")
struct CopyTests {
    static let columns = ["id", "user_id", "day", "at", "done", "note", "data"]

    static func create(_ client: PostgresClient) async throws {
        try await client.query(
            """
            CREATE TABLE copied (id int PRIMARY KEY, user_id uuid NOT NULL, day date NOT NULL, at timestamptz NOT NULL,
                                 done boolean NOT NULL, note text, data jsonb)
            """)
    }

    /// Writes `rows` rows, `perCall` a call; row n has id n.
    static func write(_ rows: inout BinaryCopyRows, from first: Int, count: Int) {
        for id in first..<(first + count) {
            rows.row(fields: 7)
            rows.int32(Int32(id))
            rows.uuid(high: 0x0123_4567_89AB_CDEF, low: UInt64(id))
            rows.date(daysSince2000: Int32(id))
            rows.timestamp(microsecondsSince2000: Int64(id) * 1_000_000)
            rows.bool(id % 2 == 0)
            if id % 3 == 0 { rows.null() } else { rows.field(Array("note \(id) ✓".utf8)) }
            rows.raw(BinaryCopyRows.encodedField(id % 5 == 0 ? nil : [1] + Array(#"{"n": \#(id)}"#.utf8)))
        }
    }

    /// Every value arrives as written, across many sends (more than one buffer's worth).
    @Test func rowsArriveAsWrittenAcrossSends() async throws {
        try await withFreshDatabase { client async throws in
            try await Self.create(client)
            let calls = Counter()
            let stored = try await client.withConnection { connection in
                try await connection.copy(into: "copied", columns: Self.columns) { rows in
                    let call = calls.next()
                    Self.write(&rows, from: call * 10_000, count: 10_000)
                    return call < 19
                }
            }
            #expect(stored == 200_000)
            #expect(calls.value == 20)
            let row = try #require(
                try await client.query(
                    """
                    SELECT count(*) AS n, count(DISTINCT user_id) AS users, min(day)::text AS first, max(at) AS last,
                           count(*) FILTER (WHERE done) AS done, count(note) AS notes, count(data) AS data,
                           count(*) FILTER (WHERE user_id::text <> '01234567-89ab-cdef-0000-' || lpad(to_hex(id), 12, '0')) AS wrong_ids,
                           count(*) FILTER (WHERE note <> 'note ' || id || ' ✓' OR (data->>'n')::int <> id OR day <> date '2000-01-01' + id) AS wrong
                    FROM copied
                    """
                ).first)
            #expect(try row.decode("n", as: Int.self) == 200_000)
            #expect(try row.decode("users", as: Int.self) == 200_000)
            #expect(try row.decode("first", as: String.self) == "2000-01-01")
            #expect(try row.decode("last", as: Date.self) == Date(timeIntervalSince1970: 946_684_800 + 199_999))
            #expect(try row.decode("done", as: Int.self) == 100_000)
            #expect(try row.decode("notes", as: Int.self) == 200_000 - 66_667)
            #expect(try row.decode("data", as: Int.self) == 200_000 - 40_000)
            #expect(try row.decode("wrong_ids", as: Int.self) == 0)
            #expect(try row.decode("wrong", as: Int.self) == 0)
        }
    }

    /// A producer that throws stores nothing, its error comes back, and the connection is
    /// good for the next statement.
    @Test func aProducerThatThrowsStoresNothing() async throws {
        struct Stop: Error {}
        try await withFreshDatabase(maxConnections: 1) { client async throws in
            try await Self.create(client)
            let calls = Counter()
            await #expect(throws: Stop.self) {
                try await client.withConnection { connection in
                    try await connection.copy(into: "copied", columns: Self.columns) { rows in
                        Self.write(&rows, from: calls.next() * 100, count: 100)
                        if calls.value == 3 { throw Stop() }
                        return true
                    }
                }
            }
            #expect(try await client.query("SELECT count(*) AS n FROM copied")[0].decode("n", as: Int.self) == 0)
        }
    }

    /// A row the server refuses (a duplicate key, a wrong field count) fails the copy with
    /// the server's error, stores none of it, and leaves the connection usable; in a
    /// transaction, the transaction fails.
    @Test func aRefusedRowFailsTheWholeCopy() async throws {
        try await withFreshDatabase(maxConnections: 1) { client async throws in
            try await Self.create(client)
            let duplicate = await #expect(throws: PostgresError.self) {
                try await client.withConnection { connection in
                    try await connection.copy(into: "copied", columns: Self.columns) { rows in
                        Self.write(&rows, from: 0, count: 50)
                        Self.write(&rows, from: 49, count: 1)
                        return false
                    }
                }
            }
            #expect(duplicate?.isUniqueViolation == true)
            let short = await #expect(throws: PostgresError.self) {
                try await client.withTransaction { connection in
                    try await connection.query("INSERT INTO copied VALUES (1000, gen_random_uuid(), current_date, now(), true)")
                    return try await connection.copy(into: "copied", columns: Self.columns) { rows in
                        rows.row(fields: 2)
                        rows.int32(1)
                        rows.null()
                        return false
                    }
                }
            }
            #expect(short?.message.contains("row field count") == true, "\(String(describing: short))")
            #expect(try await client.query("SELECT count(*) AS n FROM copied")[0].decode("n", as: Int.self) == 0)
            let unknown = await #expect(throws: PostgresError.self) {
                try await client.withConnection { try await $0.copy(into: "copied", columns: ["id", "nope"]) { _ in false } }
            }
            #expect(unknown?.message.contains("\"nope\"") == true, "\(String(describing: unknown))")
            // One connection throughout: it is still good.
            #expect(try await client.query("SELECT 1 AS one")[0].decode("one", as: Int.self) == 1)
        }
    }
}

/// Calls of a producer, which runs on one thread at a time.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    var value: Int { lock.withLock { count } }
    /// The number of calls before this one.
    func next() -> Int {
        lock.withLock {
            defer { count += 1 }
            return count
        }
    }
}
