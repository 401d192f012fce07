import CLibPQ
import Foundation
import Logging

/// One libpq connection, used by one thread at a time (the pool hands it to one task, and
/// every call runs on the client's blocking thread pool). All calls here block.
final class LibPQConnection: @unchecked Sendable {
    let handle: OpaquePointer
    private let notices: Unmanaged<NoticeSink>
    var closed = false
    /// Set when a failure left the protocol state unknown: never reuse.
    var broken = false
    /// Where this connection goes, for messages (never the password).
    let target: String
    /// Statements prepared on this connection (by text and parameter types), by name. A
    /// statement the application runs again is parsed and planned once per connection; the
    /// server may then keep a generic plan, which matters most under row-level security.
    var prepared: [PreparedKey: String] = [:]
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
                    code: .connectionFailed,
                    message: "connected to PostgreSQL (\(target)) but cannot read its extensions: \(error.message)",
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

    static func errorMessage(_ handle: OpaquePointer) -> String {
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
    func prepare(_ sql: SQL, text: String) -> String? {
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
}

/// A NULL-terminated array of C strings, alive for the call.
func withCStringArray<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
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

/// Lays out a statement's parameters for libpq and keeps every pointer alive for the call.
func withParameters<R>(
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
