import CLibPQ
import Foundation
import Logging

/// One libpq connection, used by one thread at a time (the pool hands it to one task, and
/// every call runs on the client's blocking thread pool). All calls here block.
final class LibPQConnection: @unchecked Sendable {
    private let handle: OpaquePointer
    private let notices: Unmanaged<NoticeSink>
    private var closed = false
    /// Set when a failure left the protocol state unknown: never reuse.
    private var broken = false
    /// Where this connection goes, for messages (never the password).
    let target: String
    /// Statements prepared on this connection (by text and parameter types), by name. A
    /// statement the application runs again is parsed and planned once per connection; the
    /// server may then keep a generic plan, which matters most under row-level security.
    private var prepared: [PreparedKey: String] = [:]
    /// How this connection makes transaction settings: `.setConfig` or `.setLocal`, resolved
    /// when it opened.
    private(set) var settingsStyle: TransactionSettings.Style = .setConfig
    /// Past this many, further statements run unprepared (text built from unbounded input
    /// must not grow the server's memory).
    static let maxPreparedStatements = 256

    struct PreparedKey: Hashable {
        let text: String
        let types: [UInt32]
    }

    private init(handle: OpaquePointer, notices: Unmanaged<NoticeSink>, target: String) {
        self.handle = handle
        self.notices = notices
        self.target = target
    }

    deinit { close() }

    // MARK: Connecting

    static func connect(_ configuration: PostgresConfiguration, logger: Logger) throws -> LibPQConnection {
        let pairs = configuration.keywordValues
        if !configuration.connectionString.isEmpty { try validate(configuration.connectionString) }
        let handle = withCStringArray(pairs.map(\.0)) { keywords in
            withCStringArray(pairs.map(\.1)) { values in
                PQconnectdbParams(keywords, values, 1)
            }
        }
        guard let handle else {
            throw PostgresError(code: .connectionFailed, message: "libpq could not allocate a connection")
        }
        let target = describeTarget(handle)
        guard PQstatus(handle) == CONNECTION_OK else {
            let reason = errorMessage(handle)
            PQfinish(handle)
            throw PostgresError(code: .connectionFailed, message: "cannot connect to PostgreSQL (\(target)): \(reason)")
        }
        let notices = Unmanaged.passRetained(NoticeSink(logger: logger))
        PQsetNoticeReceiver(handle, noticeReceiver, notices.toOpaque())
        let connection = LibPQConnection(handle: handle, notices: notices, target: target)
        if let role = configuration.role {
            do {
                _ = try connection.runScript("SET ROLE " + connection.quoteIdentifier(role))
            } catch let error as PostgresError {
                connection.close()
                throw PostgresError(
                    code: .connectionFailed,
                    message: "connected to PostgreSQL (\(target)) but cannot switch to role \"\(role)\": \(error.message). "
                        + "Run `attest migrate` to create it, or grant it to the login role.",
                    sqlState: error.sqlState)
            }
        }
        switch configuration.settingsStyle {
        case .setConfig, .setLocal: connection.settingsStyle = configuration.settingsStyle
        case .automatic:
            do {
                let citus = try connection.runScript("SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'citus'")
                connection.settingsStyle = citus.count > 0 ? .setLocal : .setConfig
            } catch let error as PostgresError {
                connection.close()
                throw PostgresError(
                    code: .connectionFailed, message: "connected to PostgreSQL (\(target)) but cannot read its extensions: \(error.message)",
                    sqlState: error.sqlState)
            }
        }
        return connection
    }

    /// Checks the connection string's syntax so a typo gets its own message. A password
    /// the string holds is cut out of libpq's message.
    static func validate(_ connectionString: String) throws {
        var errorPointer: UnsafeMutablePointer<CChar>? = nil
        if let options = PQconninfoParse(connectionString, &errorPointer) {
            PQconninfoFree(options)
            return
        }
        var reason = "it could not be parsed"
        if let errorPointer {
            reason = String(cString: errorPointer).trimmingCharacters(in: .whitespacesAndNewlines)
            PQfreemem(errorPointer)
        }
        for secret in passwords(in: connectionString) where !secret.isEmpty {
            reason = reason.replacingOccurrences(of: secret, with: "…")
        }
        throw PostgresError(
            code: .connectionFailed,
            message: "the database URL is not a valid libpq URI or conninfo string (\(reason)); "
                + "expected e.g. postgresql://user@host:5432/dbname or 'host=/run/postgresql dbname=attest'")
    }

    /// Whatever could be a password in a connection string that libpq cannot parse: the
    /// `user:password@` part of a URI, a `password=` value, and every `password` query value.
    static func passwords(in connectionString: String) -> [String] {
        var found: [String] = []
        if let scheme = connectionString.range(of: "://") {
            let rest = connectionString[scheme.upperBound...]
            if let at = rest.firstIndex(of: "@"), let colon = rest[..<at].firstIndex(of: ":") {
                let secret = String(rest[rest.index(after: colon)..<at])
                found.append(secret)
                found.append(secret.removingPercentEncoding ?? secret)
            }
        }
        for part in connectionString.split(whereSeparator: { $0 == " " || $0 == "&" || $0 == "?" }) {
            let pieces = part.split(separator: "=", maxSplits: 1)
            if pieces.count == 2, pieces[0].lowercased() == "password" {
                found.append(String(pieces[1]).trimmingCharacters(in: CharacterSet(charactersIn: "'")))
            }
        }
        return found
    }

    private static func describeTarget(_ handle: OpaquePointer) -> String {
        func field(_ value: UnsafeMutablePointer<CChar>?) -> String? {
            guard let value else { return nil }
            let text = String(cString: value)
            return text.isEmpty ? nil : text
        }
        var parts: [String] = []
        if let host = field(PQhost(handle)) { parts.append(host.hasPrefix("/") ? "socket directory \(host)" : "host \(host)") }
        if let port = field(PQport(handle)) { parts.append("port \(port)") }
        if let database = field(PQdb(handle)) { parts.append("database \(database)") }
        if let user = field(PQuser(handle)) { parts.append("user \(user)") }
        return parts.isEmpty ? "libpq defaults" : parts.joined(separator: ", ")
    }

    private static func errorMessage(_ handle: OpaquePointer) -> String {
        guard let message = PQerrorMessage(handle) else { return "unknown error" }
        return String(cString: message)
            .split(whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
            .joined(separator: "; ")
    }

    // MARK: State

    /// False once the connection is broken or closed.
    var isConnected: Bool { !closed && !broken && PQstatus(handle) == CONNECTION_OK }

    /// Whether libpq is in nonblocking mode: only between `sendWithoutBlocking` and `receive`.
    var isNonblocking: Bool { PQisnonblocking(handle) == 1 }

    /// True when the connection can go back to the pool: connected and not inside a transaction.
    var isReusable: Bool { isConnected && PQtransactionStatus(handle) == PQTRANS_IDLE }

    /// Cheap check that an idle connection is still there: a server that went away (restart,
    /// `pg_terminate_backend`) leaves an error and EOF on the socket, which `poll` sees at once.
    func isAlive() -> Bool {
        guard isReusable else { return false }
        var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
        guard descriptor.fd >= 0 else { return false }
        // Readable while idle: a notice, a notification, or the server saying goodbye (an
        // error message, then end of file). Read until nothing is left or the end shows.
        for _ in 0..<8 {
            descriptor.revents = 0
            let ready = poll(&descriptor, 1, 0)
            if ready == 0 { return isReusable }
            if ready < 0 || descriptor.revents & Int16(POLLERR | POLLNVAL) != 0 { return false }
            guard PQconsumeInput(handle) == 1 else { return false }
            while let notification = PQnotifies(handle) { PQfreemem(notification) }
        }
        return isReusable
    }

    func close() {
        guard !closed else { return }
        closed = true
        PQfinish(handle)
        notices.release()
    }

    func quoteIdentifier(_ identifier: String) -> String {
        guard let quoted = PQescapeIdentifier(handle, identifier, identifier.utf8.count) else {
            return "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        }
        defer { PQfreemem(quoted) }
        return String(cString: quoted)
    }

    /// The password as the server stores it (SCRAM-SHA-256 with the server's default
    /// `password_encryption`), computed here by libpq, so the clear text never reaches the
    /// server or its statement log.
    func encryptPassword(_ password: String, user: String) throws -> String {
        guard let encrypted = PQencryptPasswordConn(handle, password, user, nil) else {
            throw PostgresError(code: .server, message: "cannot encrypt the password: \(Self.errorMessage(handle))")
        }
        defer { PQfreemem(encrypted) }
        return String(cString: encrypted)
    }

    // MARK: Statements

    /// Runs one statement with bound parameters, results in binary.
    func execute(_ sql: SQL) throws -> PostgresRows {
        if let failure = sql.encodingFailure { throw failure }
        let text = sql.text
        let name = prepare(sql, text: text)
        let result = withParameters(of: sql) { count, types, values, lengths, formats in
            if let name { return PQexecPrepared(handle, name, count, values, lengths, formats, 1) }
            return PQexecParams(handle, text, count, types, values, lengths, formats, 1)
        }
        defer { PQclear(result) }
        return try rows(from: result, query: text)
    }

    /// Runs SQL text that may hold several statements (simple query protocol, text results).
    /// Returns the last statement's rows.
    @discardableResult
    func runScript(_ text: String) throws -> PostgresRows {
        if text.utf8.contains(0) {
            throw PostgresError(code: .encoding, message: "the SQL script contains a NUL character")
        }
        let result = PQexec(handle, text)
        defer { PQclear(result) }
        return try rows(from: result, query: nil)
    }

    /// The command tag of the last `runScript` ("COMMIT", "ROLLBACK", …).
    func commandStatus(ofScript text: String) throws -> String {
        let result = PQexec(handle, text)
        defer { PQclear(result) }
        _ = try rows(from: result, query: text)
        return result.flatMap { PQcmdStatus($0) }.map { String(cString: $0) } ?? ""
    }

    // MARK: Prepared statements

    /// The name `sql` is prepared under on this connection, preparing it first when it is new
    /// (one round trip, once per connection). nil: run it unprepared (no parameters, not a
    /// plain query, the cache full, or the server refused it, whose error the unprepared run
    /// then reports in full).
    private func prepare(_ sql: SQL, text: String) -> String? {
        guard !sql.bindings.isEmpty, Self.isPreparable(text) else { return nil }
        let key = PreparedKey(text: text, types: sql.bindings.map { UInt32($0.type.oid) })
        if let name = prepared[key] { return name }
        guard prepared.count < Self.maxPreparedStatements else { return nil }
        let name = "attest_\(prepared.count + 1)"
        let result = PQprepare(handle, name, text, Int32(key.types.count), key.types.map { Oid($0) })
        defer { PQclear(result) }
        guard let result, PQresultStatus(result) == PGRES_COMMAND_OK else { return nil }
        prepared[key] = name
        return name
    }

    /// Queries and data changes; utility statements (BEGIN, SET, DDL) gain nothing.
    static func isPreparable(_ text: String) -> Bool {
        let head = text.drop { $0.isWhitespace }.prefix(6).uppercased()
        return ["SELECT", "INSERT", "UPDATE", "DELETE", "WITH"].contains { head.hasPrefix($0) }
    }

    // MARK: Pipeline

    /// Sends every unit's statements and a sync after each unit, in one go, then reads all
    /// the results. Statements of one unit run as one implicit transaction: a failure rolls
    /// back and skips the rest of its own unit only. Throws only when the connection broke,
    /// after which the outcome of the units is unknown.
    func pipeline(_ units: [PipelineUnit]) throws -> [Result<[PostgresRows], PostgresError>] {
        guard settingsStyle == .setLocal else { return try pipelineOnce(units) }
        // Units in explicit transaction blocks: one that fails leaves its block aborted, and
        // every unit after it then fails at its BEGIN (25P02). Roll back and send those again.
        var outcomes: [Result<[PostgresRows], PostgresError>] = []
        var rest = units[...]
        while !rest.isEmpty {
            if PQtransactionStatus(handle) == PQTRANS_INERROR { try runScript("ROLLBACK") }
            let sent = try pipelineOnce(Array(rest))
            let poisoned = sent.firstIndex {
                if case .failure(let error) = $0 { return error.sqlState == "25P02" }
                return false
            }
            // The first unit of a batch starts clean, so it is never among the poisoned ones.
            guard let poisoned, poisoned > 0 else {
                outcomes.append(contentsOf: sent)
                break
            }
            outcomes.append(contentsOf: sent[..<poisoned])
            rest = rest.dropFirst(poisoned)
        }
        if PQtransactionStatus(handle) == PQTRANS_INERROR { try runScript("ROLLBACK") }
        return outcomes
    }

    /// `BEGIN` and `settings`, in one round trip.
    func begin(_ settings: TransactionSettings) throws {
        let sets = settings.statements(settingsStyle)
        if sets.isEmpty {
            try runScript("BEGIN")
            return
        }
        if let failure = sets.lazy.compactMap(\.encodingFailure).first { throw failure }
        do {
            if settingsStyle == .setLocal {
                try runScript((["BEGIN"] + sets.map(\.text)).joined(separator: "; "))
            } else {
                _ = try pipelineOnce([PipelineUnit(statements: ["BEGIN"] + sets)])[0].get()
            }
        } catch let error as PostgresError {
            // A setting the server refused leaves the block aborted.
            if error.code != .connectionLost { _ = try? runScript("ROLLBACK") }
            throw error
        }
    }

    private func pipelineOnce(_ units: [PipelineUnit]) throws -> [Result<[PostgresRows], PostgresError>] {
        let plans = units.map { $0.plan(settingsStyle) }
        // New statements are prepared first, outside the pipeline.
        let names: [[String?]] = plans.map { plan in
            guard plan.statements.allSatisfy({ $0.encodingFailure == nil }) else { return [] }
            return plan.statements.map { prepare($0, text: $0.text) }
        }
        return try receive(try send(plans, names: names))
    }

    /// A pipeline whose statements have all been handed to libpq, for `receive` to read back.
    struct SentPipeline: @unchecked Sendable {  // only moves with its connection, to the pool's thread
        let plans: [(statements: [SQL], callers: [Bool])]
        /// Per unit, the statements sent; none for a unit that failed before sending.
        let sent: [[SQL]]
        /// The units that failed before anything of them was sent.
        let refused: [PostgresError?]
        /// Whether it was sent in nonblocking mode, which `receive` ends.
        let nonblocking: Bool
    }

    /// Sends `units` without blocking, from the caller's thread, when every statement of them
    /// is prepared on this connection already (or takes no parameters) and the connection
    /// makes settings with `set_config`: the statements then reach PostgreSQL while the pool's
    /// thread that will read the results wakes (measured: about 0.2 ms a call under load),
    /// instead of after. nil when that is not so (run `pipeline` on the pool instead); throws
    /// only when the connection broke.
    func sendWithoutBlocking(_ units: [PipelineUnit]) throws -> SentPipeline? {
        guard settingsStyle == .setConfig, !broken else { return nil }
        let plans = units.map { $0.plan(settingsStyle) }
        var names: [[String?]] = []
        names.reserveCapacity(plans.count)
        for plan in plans {
            var unit: [String?] = []
            unit.reserveCapacity(plan.statements.count)
            for sql in plan.statements {
                guard sql.encodingFailure == nil else { return nil }
                if sql.bindings.isEmpty {
                    unit.append(nil)
                    continue
                }
                let text = sql.text
                guard let name = prepared[PreparedKey(text: text, types: sql.bindings.map { UInt32($0.type.oid) })] else { return nil }
                unit.append(name)
            }
            names.append(unit)
        }
        guard PQsetnonblocking(handle, 1) == 0 else { return nil }
        do {
            return try send(plans, names: names, nonblocking: true)
        } catch {
            broken = true
            throw error
        }
    }

    /// Enters pipeline mode and sends every unit's statements, a sync after each.
    private func send(
        _ plans: [(statements: [SQL], callers: [Bool])], names: [[String?]], nonblocking: Bool = false
    ) throws -> SentPipeline {
        guard PQenterPipelineMode(handle) == 1 else {
            throw connectionError(during: "entering pipeline mode")
        }
        var refused: [PostgresError?] = Array(repeating: nil, count: plans.count)
        var sentStatements: [[SQL]] = Array(repeating: [], count: plans.count)
        do {
            for (index, plan) in plans.enumerated() {
                let statements = plan.statements
                // A value that cannot be encoded fails its unit before anything of it is sent.
                if let failure = statements.lazy.compactMap(\.encodingFailure).first {
                    refused[index] = failure
                    continue
                }
                for (sql, name) in zip(statements, names[index]) {
                    let sent = withParameters(of: sql) { count, types, values, lengths, formats in
                        if let name { return PQsendQueryPrepared(handle, name, count, values, lengths, formats, 1) }
                        return PQsendQueryParams(handle, sql.text, count, types, values, lengths, formats, 1)
                    }
                    guard sent == 1 else { throw connectionError(during: "sending a pipelined statement") }
                }
                guard PQpipelineSync(handle) == 1 else { throw connectionError(during: "sending a pipeline sync") }
                sentStatements[index] = statements
            }
            // Nonblocking, what the socket did not take now is sent by `receive`.
            if nonblocking, PQflush(handle) < 0 { throw connectionError(during: "sending a pipeline") }
        } catch {
            // The connection's protocol state is unknown now; the pool will discard it.
            broken = true
            throw error
        }
        return SentPipeline(plans: plans, sent: sentStatements, refused: refused, nonblocking: nonblocking)
    }

    /// Reads the results of a sent pipeline (blocking) and leaves pipeline mode.
    func receive(_ sent: SentPipeline) throws -> [Result<[PostgresRows], PostgresError>] {
        var outcomes: [Result<[PostgresRows], PostgresError>?] = sent.refused.map { $0.map { .failure($0) } }
        do {
            if sent.nonblocking { try endNonblocking() }
            for index in sent.plans.indices where outcomes[index] == nil {
                var results: [PostgresRows] = []
                var failure: PostgresError?
                for (sql, callers) in zip(sent.sent[index], sent.plans[index].callers) {
                    guard let result = PQgetResult(handle) else { throw connectionError(during: "reading pipeline results") }
                    do {
                        let rows = try rows(from: result, query: sql.text)
                        PQclear(result)
                        // Callers see their own statements' rows only, not the settings' or BEGIN's.
                        if callers { results.append(rows) }
                    } catch let error as PostgresError {
                        PQclear(result)
                        if error.code == .connectionLost { throw error }
                        // The first error is the cause; the statements after it report "aborted".
                        if failure == nil { failure = error }
                    }
                    // Each statement's results end with a NULL.
                    if let extra = PQgetResult(handle) {
                        defer { PQclear(extra) }
                        throw unexpected(extra, instead: "the end of a pipelined statement's results")
                    }
                }
                guard let sync = PQgetResult(handle) else { throw connectionError(during: "reading a pipeline sync") }
                defer { PQclear(sync) }
                guard PQresultStatus(sync) == PGRES_PIPELINE_SYNC else { throw unexpected(sync, instead: "a pipeline sync") }
                outcomes[index] = failure.map { .failure($0) } ?? .success(results)
            }
        } catch {
            // The connection's protocol state is unknown now; the pool will discard it.
            broken = true
            throw error
        }
        guard PQexitPipelineMode(handle) == 1 else {
            throw connectionError(during: "leaving pipeline mode")
        }
        return outcomes.map { $0 ?? .failure(PostgresError(code: .protocolError, message: "a pipelined unit got no outcome")) }
    }

    /// Sends what a nonblocking send left in libpq's buffer, waiting for the socket as it
    /// must, and returns the connection to blocking mode (every other call expects it).
    private func endNonblocking() throws {
        var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN | POLLOUT), revents: 0)
        while true {
            let pending = PQflush(handle)
            if pending == 0 { break }
            guard pending == 1, descriptor.fd >= 0 else { throw connectionError(during: "sending a pipeline") }
            descriptor.revents = 0
            guard poll(&descriptor, 1, -1) >= 0 || errno == EINTR else { throw connectionError(during: "waiting to send a pipeline") }
            // Reading what the server sent meanwhile keeps both sides from waiting on each other.
            if descriptor.revents & Int16(POLLIN) != 0, PQconsumeInput(handle) == 0 {
                throw connectionError(during: "sending a pipeline")
            }
        }
        guard PQsetnonblocking(handle, 0) == 0 else { throw connectionError(during: "returning to blocking mode") }
    }

    // MARK: COPY

    /// Runs `COPY table (columns) FROM STDIN` in the binary format and sends the rows
    /// `produce` writes, a buffer at a time, until it returns false. Returns the rows the
    /// server stored. When `produce` throws, the copy is ended with an error so the server
    /// stores none of it (and the transaction, if any, is aborted), and the error is rethrown.
    func copyIn(table: String, columns: [String], produce: (inout BinaryCopyRows) throws -> Bool) throws -> Int {
        let statement = "COPY \(quoteIdentifier(table)) (\(columns.map(quoteIdentifier).joined(separator: ", "))) FROM STDIN WITH (FORMAT binary)"
        let started = PQexec(handle, statement)
        defer { PQclear(started) }
        guard let started, PQresultStatus(started) == PGRES_COPY_IN else {
            _ = try rows(from: started, query: statement)
            throw PostgresError(code: .protocolError, message: "expected the server to start a COPY", query: statement)
        }
        var rows = BinaryCopyRows()
        var stopped: (any Error)?
        rows.header()
        var more = true
        while more {
            do {
                more = try produce(&rows)
            } catch {
                stopped = error
                break
            }
            if !more { rows.trailer() }
            if rows.byteCount > 0 {
                // Blocking: fails only when the connection does. An error of the server's (a
                // refused row) comes as the copy's result, once it has been ended.
                guard PQputCopyData(handle, rows.base.assumingMemoryBound(to: CChar.self), Int32(rows.byteCount)) == 1 else {
                    broken = true
                    throw connectionError(during: "sending COPY data")
                }
                rows.reset()
            }
        }
        guard PQputCopyEnd(handle, stopped == nil ? nil : "the client stopped the copy") == 1 else {
            broken = true
            throw connectionError(during: "ending a COPY")
        }
        let result = PQgetResult(handle)
        let outcome = Result { try self.rows(from: result, query: statement) }
        PQclear(result)
        // The copy's result ends with a NULL.
        while let extra = PQgetResult(handle) { PQclear(extra) }
        if let stopped { throw stopped }
        return try outcome.get().affectedRows
    }

    // MARK: Results

    /// A result where libpq should have given something else: the connection's failure when
    /// it is an error (libpq reports a dead connection that way), else a protocol error.
    private func unexpected(_ result: OpaquePointer, instead expected: String) -> PostgresError {
        let status = PQresultStatus(result)
        if status == PGRES_FATAL_ERROR { return error(from: result, query: nil) }
        return PostgresError(code: .protocolError, message: "expected \(expected), got \(String(cString: PQresStatus(status)))")
    }

    private func connectionError(during activity: String) -> PostgresError {
        let message = Self.errorMessage(handle)
        return PostgresError(code: connectionIsLost() ? .connectionLost : .protocolError, message: "\(activity): \(message)")
    }

    /// Whether the server is gone. libpq can fail a read or write before it marks the
    /// connection bad (in pipeline mode, a failed write is remembered while results are still
    /// read), so a connection that still says OK is asked to read once more: that fails, and
    /// marks it bad, when the server has closed it.
    private func connectionIsLost() -> Bool {
        PQstatus(handle) != CONNECTION_OK || PQconsumeInput(handle) == 0 || PQstatus(handle) != CONNECTION_OK
    }

    /// Copies a result's rows out of libpq, or turns its error into a `PostgresError` naming
    /// `query`, whose text is only made then: a pipelined statement's is a few kilobytes
    /// joined from its parts.
    private func rows(from result: OpaquePointer?, query: @autoclosure () -> String?) throws -> PostgresRows {
        guard let result else { throw connectionError(during: "running a statement") }
        switch PQresultStatus(result) {
        case PGRES_TUPLES_OK, PGRES_COMMAND_OK, PGRES_EMPTY_QUERY, PGRES_SINGLE_TUPLE:
            return materialize(result)
        case PGRES_PIPELINE_ABORTED:
            throw PostgresError(code: .pipelineAborted, message: "skipped after an earlier statement of its unit failed", query: query())
        default:
            throw error(from: result, query: query())
        }
    }

    private func error(from result: OpaquePointer, query: String?) -> PostgresError {
        func field(_ code: Character) -> String? {
            guard let value = PQresultErrorField(result, Int32(code.asciiValue!)) else { return nil }
            return String(cString: value)
        }
        let sqlState = field("C")
        var message = field("M") ?? Self.errorMessage(handle)
        if message.isEmpty { message = "unknown error" }
        // Lost connections come back as errors libpq makes itself (no SQLSTATE), or as the
        // server's shutdown and connection errors (57P01–57P03, class 08).
        let lost = sqlState?.hasPrefix("08") == true || sqlState == "57P01" || sqlState == "57P02" || sqlState == "57P03"
            || (sqlState == nil ? connectionIsLost() : PQstatus(handle) != CONNECTION_OK)
        return PostgresError(
            code: lost ? .connectionLost : .server, message: message, sqlState: sqlState,
            constraint: field("n"), table: field("t"), column: field("c"), detail: field("D"),
            hint: field("H"), query: query)
    }

    private func materialize(_ result: OpaquePointer) -> PostgresRows {
        let rowCount = Int(PQntuples(result))
        let columnCount = Int(PQnfields(result))
        var columns: [PostgresRows.Column] = []
        columns.reserveCapacity(columnCount)
        for column in 0..<columnCount {
            let name = PQfname(result, Int32(column)).map { String(cString: $0) } ?? "?column?"
            columns.append(.init(name: name, type: PostgresType(oid: PQftype(result, Int32(column)))))
        }
        var cells: [(offset: Int, length: Int)] = []
        cells.reserveCapacity(rowCount * columnCount)
        var total = 0
        for row in 0..<Int32(rowCount) {
            for column in 0..<Int32(columnCount) where PQgetisnull(result, row, column) == 0 {
                total += Int(PQgetlength(result, row, column))
            }
        }
        var storage: [UInt8] = []
        storage.reserveCapacity(total)
        for row in 0..<Int32(rowCount) {
            for column in 0..<Int32(columnCount) {
                if PQgetisnull(result, row, column) != 0 {
                    cells.append((storage.count, -1))
                    continue
                }
                let length = Int(PQgetlength(result, row, column))
                cells.append((storage.count, length))
                if length > 0, let value = PQgetvalue(result, row, column) {
                    value.withMemoryRebound(to: UInt8.self, capacity: length) {
                        storage.append(contentsOf: UnsafeBufferPointer(start: $0, count: length))
                    }
                }
            }
        }
        let affected = PQcmdTuples(result).flatMap { Int(String(cString: $0)) } ?? 0
        return PostgresRows(columns: columns, affectedRows: affected, storage: storage, cells: cells, rowCount: rowCount)
    }
}

/// Settings a transaction makes before its statements: they last until the transaction ends
/// (what row-level security policies read). The wrapper does not know what they mean.
public struct TransactionSettings: Sendable, Equatable {
    public var values: [(name: String, value: String)]

    public init(_ values: [(name: String, value: String)] = []) { self.values = values }

    public static let none = TransactionSettings()

    public static func == (lhs: TransactionSettings, rhs: TransactionSettings) -> Bool {
        lhs.values.map(\.name) == rhs.values.map(\.name) && lhs.values.map(\.value) == rhs.values.map(\.value)
    }

    /// How a connection makes them.
    public enum Style: Sendable, Equatable {
        /// `SELECT set_config(name, value, true)`, the values bound as parameters, in the
        /// implicit transaction of each pipelined unit: the fewest statements.
        case setConfig
        /// `BEGIN`, `SET LOCAL name = 'value'`, the statements, `COMMIT` for every unit. A Citus
        /// coordinator passes `SET LOCAL` on to its workers (`citus.propagate_set_commands =
        /// 'local'`), but not a value made by `set_config`, and `SET LOCAL` needs an explicit
        /// transaction block.
        case setLocal
        /// `.setLocal` on a server with the `citus` extension, else `.setConfig` (one catalog
        /// read when a connection opens).
        case automatic
    }

    /// The statements that make them in `style` (`.setConfig` or `.setLocal`); none when
    /// there are none.
    func statements(_ style: Style) -> [SQL] {
        guard !values.isEmpty else { return [] }
        guard style == .setLocal else {
            var sql: SQL = "SELECT "
            for (index, setting) in values.enumerated() {
                sql = sql + (index == 0 ? "" : ", ") + "set_config(\(setting.name), \(setting.value), true)"
            }
            return [sql]
        }
        // SET takes no parameters: the name must be a plain (dotted) name, the value is quoted.
        return values.map { setting in
            let plain = !setting.name.isEmpty && setting.name.utf8.allSatisfy {
                ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x5F || $0 == 0x2E
            }
            var sql = SQL(unsafeSQL: "SET LOCAL \(setting.name) = " + quoteLiteral(setting.value))
            if !plain {
                sql.encodingFailure = PostgresError(code: .encoding, message: "a setting's name must be letters, digits, '_' and '.': \(setting.name)")
            } else if setting.value.utf8.contains(0) {
                sql.encodingFailure = PostgresError(code: .encoding, message: "the value of setting \(setting.name) contains a NUL character")
            }
            return sql
        }
    }
}

/// `value` as an SQL string literal (standard_conforming_strings, on since PostgreSQL 9.1).
func quoteLiteral(_ value: String) -> String {
    "'" + value.replacingOccurrences(of: "'", with: "''") + "'"
}

/// Statements sent together in a pipeline and committed (or rolled back) as one.
public struct PipelineUnit: Sendable {
    /// Settings, then the statements that run with them; a later segment's settings replace
    /// an earlier one's for the rest of the unit.
    public struct Segment: Sendable {
        public var settings: TransactionSettings
        public var statements: [SQL]

        public init(settings: TransactionSettings = .none, statements: [SQL]) {
            self.settings = settings
            self.statements = statements
        }
    }

    public var segments: [Segment]

    public init(settings: TransactionSettings = .none, statements: [SQL]) {
        segments = [Segment(settings: settings, statements: statements)]
    }

    public init(segments: [Segment]) { self.segments = segments }

    /// What is sent, and which of it is the caller's (whose results the caller gets).
    func plan(_ style: TransactionSettings.Style) -> (statements: [SQL], callers: [Bool]) {
        var statements: [SQL] = [], callers: [Bool] = []
        func add(_ sql: SQL, _ callersOwn: Bool) {
            statements.append(sql)
            callers.append(callersOwn)
        }
        let explicit = style == .setLocal
        if explicit { add("BEGIN", false) }
        for segment in segments {
            for setting in segment.settings.statements(style) { add(setting, false) }
            for sql in segment.statements { add(sql, true) }
        }
        if explicit { add("COMMIT", false) }
        return (statements, callers)
    }
}

/// Lays out a statement's parameters for libpq and keeps every pointer alive for the call.
private func withParameters<R>(
    of sql: SQL,
    _ body: (
        Int32, UnsafePointer<Oid>?, UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?, UnsafePointer<Int32>?
    ) -> R
) -> R {
    let count = sql.bindings.count
    if count == 0 { return body(0, nil, nil, nil, nil) }
    var storage: [UInt8] = [0]  // never empty, so an empty value still gets a non-NULL pointer
    var offsets: [Int] = []
    offsets.reserveCapacity(count)
    for binding in sql.bindings {
        offsets.append(storage.count)
        if let value = binding.value { storage.append(contentsOf: value) }
    }
    let types = sql.bindings.map { Oid($0.type.oid) }
    let lengths = sql.bindings.map { Int32($0.value?.count ?? 0) }
    let formats = [Int32](repeating: 1, count: count)
    return storage.withUnsafeBufferPointer { bytes in
        let base = UnsafeRawPointer(bytes.baseAddress!)
        let values: [UnsafePointer<CChar>?] = sql.bindings.indices.map { index in
            sql.bindings[index].value == nil ? nil : (base + offsets[index]).assumingMemoryBound(to: CChar.self)
        }
        return body(Int32(count), types, values, lengths, formats)
    }
}

/// A NULL-terminated array of C strings, alive for the call.
private func withCStringArray<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
    let copies = strings.map { strdup($0) }
    defer { copies.forEach { free($0) } }
    let pointers: [UnsafePointer<CChar>?] = copies.map { UnsafePointer($0) } + [nil]
    return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
}

/// Receives NOTICE and WARNING messages from the server and logs them.
final class NoticeSink: @unchecked Sendable {
    let logger: Logger
    init(logger: Logger) { self.logger = logger }
}

private let noticeReceiver: PQnoticeReceiver = { context, result in
    guard let context, let result else { return }
    let sink = Unmanaged<NoticeSink>.fromOpaque(context).takeUnretainedValue()
    func field(_ code: Character) -> String {
        PQresultErrorField(result, Int32(code.asciiValue!)).map { String(cString: $0) } ?? ""
    }
    let severity = field("V")
    let level: Logger.Level = severity == "WARNING" ? .warning : (severity == "NOTICE" || severity == "INFO" ? .info : .debug)
    sink.logger.log(
        level: level, "postgres \(severity.lowercased()): \(field("M"))",
        metadata: ["sqlstate": "\(field("C"))"])
}
