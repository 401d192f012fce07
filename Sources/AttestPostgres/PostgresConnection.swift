import Foundation
import NIOPosix
import Tracing

/// A leased connection. Every call runs on the client's blocking thread pool.
///
/// Valid only inside the `withConnection` / `withTransaction` closure that handed it out.
public struct PostgresConnection: Sendable {
    let raw: LibPQConnection
    let threadPool: NIOThreadPool

    /// Runs one statement and returns its rows (binary results).
    @discardableResult
    public func query(_ sql: SQL) async throws -> PostgresRows {
        try await traced("db.query", statements: [sql]) { try await run { try $0.execute(sql) } }
    }

    /// `password` as PostgreSQL stores it for `user` (SCRAM-SHA-256 by default), computed by
    /// libpq on this side: for `ALTER ROLE … PASSWORD`, so no clear text is ever sent or logged.
    public func encryptPassword(_ password: String, user: String) async throws -> String {
        try await run { try $0.encryptPassword(password, user: user) }
    }

    /// Runs SQL text holding any number of statements through the simple query protocol
    /// (text results, no parameters). For migrations and operator scripts only: never pass
    /// input from outside.
    @discardableResult
    public func runScript(unsafeSQL text: String) async throws -> PostgresRows {
        try await run { try $0.runScript(text) }
    }

    /// Sends every unit in one round trip (libpq pipeline mode), a sync after each. Each unit
    /// commits or rolls back on its own: a failing statement skips only the rest of its unit.
    /// The result for each unit is its statements' rows, or the error that stopped it.
    /// Throws only when the connection itself broke (then no outcome is known).
    public func pipeline(_ units: [PipelineUnit]) async throws -> [Result<[PostgresRows], PostgresError>] {
        if units.isEmpty { return [] }
        return try await traced(
            "db.pipeline", statements: units.flatMap { $0.segments.flatMap(\.statements) }, units: units.count
        ) {
            // Statements prepared before are sent from here without blocking, and only the
            // results are read on the pool: they reach PostgreSQL while its thread wakes.
            if let sent = try raw.sendWithoutBlocking(units) { return try await run { try $0.receive(sent) } }
            return try await run { try $0.pipeline(units) }
        }
    }

    /// Bulk-loads rows with `COPY table (columns) FROM STDIN` in PostgreSQL's binary format
    /// (`table` and each column are quoted as one identifier each, so not schema-qualified):
    /// `produce` writes rows (each with exactly `columns`' fields, in order) and returns
    /// whether more follow; what it wrote is sent after each call, so memory stays one
    /// buffer. It runs on the connection's thread, one call after another. Returns the rows
    /// stored. A `produce` that throws ends the copy with nothing stored and rethrows.
    ///
    /// `COPY` checks constraints and fires triggers like `INSERT`, but the server refuses it
    /// on a table whose row-level security applies to the role (use `INSERT … SELECT` from a
    /// temporary table then).
    public func copy(into table: String, columns: [String], rows produce: @escaping @Sendable (inout BinaryCopyRows) throws -> Bool)
        async throws -> Int
    {
        try await traced("db.copy", statements: [SQL(unsafeSQL: "COPY \(table) FROM STDIN")]) {
            try await run { try $0.copyIn(table: table, columns: columns, produce: produce) }
        }
    }

    /// `BEGIN` (and `settings`, in the same round trip), `body`, `COMMIT`; `ROLLBACK` when
    /// `body` throws.
    public func transaction<Result: Sendable>(
        settings: TransactionSettings = .none, _ body: (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        guard ServiceContext.current != nil else { return try await transactionSpanned(settings: settings, body) }
        return try await withSpan("db.transaction", ofKind: .client) { _ in try await transactionSpanned(settings: settings, body) }
    }

    private func transactionSpanned<Result: Sendable>(
        settings: TransactionSettings, _ body: (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await run { try $0.begin(settings) }
        let result: Result
        do {
            result = try await body(self)
        } catch {
            // A failed rollback leaves the connection mid-transaction; the pool then discards it.
            _ = try? await run { try $0.runScript("ROLLBACK") }
            throw error
        }
        let status = try await run { try $0.commandStatus(ofScript: "COMMIT") }
        // COMMIT of a transaction in which a statement failed answers ROLLBACK, not an error.
        guard status == "COMMIT" else {
            throw PostgresError(
                code: .server, message: "the transaction was rolled back because a statement in it failed",
                sqlState: "25P02")
        }
        return result
    }

    func run<Result: Sendable>(_ body: @escaping @Sendable (LibPQConnection) throws -> Result) async throws -> Result {
        let raw = self.raw
        do {
            return try await threadPool.runIfActive { try body(raw) }
        } catch let error as PostgresError {
            throw error
        } catch is NIOThreadPoolError.ThreadPoolInactive {
            throw PostgresError(code: .poolClosed, message: "the database connection pool is shut down")
        }
    }
}
