import AttestPostgres
import Foundation
import Testing

@Suite("Text is data, never SQL")
struct TextSafetyTests {
    static let hostile = [
        "'); DROP TABLE notes;--",
        "O'Brien",
        "back\\slash \\' \\\\",
        "\"double\" 'single' `back`",
        "$1 $2 $$ $tag$ ? %s",
        "; SELECT pg_sleep(10); --",
        "Robert'); DELETE FROM notes WHERE ('1'='1",
    ]

    @Test func hostileStringsAreStoredVerbatimAndRunNothing() async throws {
        try await withFreshDatabase { client async throws in
            try await client.query("CREATE TABLE notes (id serial PRIMARY KEY, body text NOT NULL)")
            for text in Self.hostile {
                try await client.query("INSERT INTO notes (body) VALUES (\(text))")
            }
            let rows = try await client.query("SELECT body FROM notes ORDER BY id")
            #expect(try rows.map { try $0.decode("body", as: String.self) } == Self.hostile)
            // The table is still there, with every row.
            #expect(try await client.query("SELECT count(*) AS n FROM notes")[0].decode("n", as: Int.self) == Self.hostile.count)
        }
    }

    @Test func unicodeSurvivesIntact() async throws {
        let samples = [
            "👩🏽‍⚕️🧪🦠", "مرحبا بالعالم", "שָׁלוֹם", "e\u{301} vs é", "\u{200F}rtl mark\u{200E}", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "日本語テキスト",
        ]
        try await withFreshDatabase { client async throws in
            for text in samples {
                let rows = try await client.query("SELECT \(text) AS value, length(\(text)) AS chars")
                #expect(try rows[0].decode("value", as: String.self) == text)
                #expect(try rows[0].decode("chars", as: Int.self) == text.unicodeScalars.count)
            }
        }
    }

    @Test func nulIsRefusedBeforeReachingTheServer() async throws {
        try await withFreshDatabase { client async throws in
            try await client.query("CREATE TABLE notes (body text)")
            let error = await #expect(throws: PostgresError.self) {
                try await client.query("INSERT INTO notes (body) VALUES (\("fine")), (\("bad\u{0}value"))")
            }
            #expect(error?.code == .encoding)
            #expect(error?.message.contains("$2") == true)
            #expect(error?.message.contains("NUL") == true)
            #expect(try await client.query("SELECT count(*) AS n FROM notes")[0].decode("n", as: Int.self) == 0)
        }
    }

    @Test func oneMegabyteValuesRoundTrip() async throws {
        try await withFreshDatabase { client async throws in
            let text = String(repeating: "abcdefghij✓", count: 100_000)
            let bytes = Data((0..<1_048_576).map { UInt8(truncatingIfNeeded: $0 &* 31) })
            try await client.query("CREATE TABLE blobs (body text, raw bytea)")
            try await client.query("INSERT INTO blobs VALUES (\(text), \(bytes))")
            let rows = try await client.query("SELECT body, raw, octet_length(raw) AS size FROM blobs")
            #expect(try rows[0].decode("body", as: String.self) == text)
            #expect(try rows[0].decode("raw", as: Data.self) == bytes)
            #expect(try rows[0].decode("size", as: Int.self) == 1_048_576)
        }
    }

    @Test func fragmentsComposeAndRenumberParameters() async throws {
        try await withFreshDatabase { client async throws in
            let low = 2, high = 4
            var sql: SQL = "SELECT n FROM generate_series(1, 10) AS n WHERE n >= \(low)"
            sql.append(" AND n <= \(high)")
            let ordered: SQL = "\(sql) ORDER BY n DESC"
            #expect(ordered.text == "SELECT n FROM generate_series(1, 10) AS n WHERE n >= $1 AND n <= $2 ORDER BY n DESC")
            let rows = try await client.query(ordered)
            #expect(try rows.map { try $0.decode("n", as: Int.self) } == [4, 3, 2])
        }
    }
}
