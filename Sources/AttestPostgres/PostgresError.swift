/// The one error type of the PostgreSQL wrapper.
///
/// `description` is safe to log: it carries the error's kind, SQLSTATE and the names of the
/// constraint and table, never the server's message text or detail (which can echo values,
/// `Key (email)=(…) already exists`) and never a connection password. `debugDescription`
/// has everything, for a developer's eyes.
public struct PostgresError: Error, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// What kind of failure this is.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        enum Base: String, Sendable {
            case connectionFailed = "connection failed"
            case connectionLost = "connection lost"
            case server = "server error"
            case poolTimeout = "timed out waiting for a database connection"
            case poolClosed = "the connection pool is shut down"
            case encoding = "cannot encode parameter"
            case decoding = "cannot decode column"
            case pipelineAborted = "statement skipped: an earlier statement of its unit of work failed"
            case protocolError = "unexpected response from libpq"
        }
        let base: Base

        /// The server could not be reached or refused the connection.
        public static let connectionFailed = Code(base: .connectionFailed)
        /// The connection broke while in use (server restart, `pg_terminate_backend`, network).
        public static let connectionLost = Code(base: .connectionLost)
        /// The server reported an error for a statement; see `sqlState`.
        public static let server = Code(base: .server)
        /// Every pooled connection stayed busy for the whole lease timeout.
        public static let poolTimeout = Code(base: .poolTimeout)
        /// The pool was shut down.
        public static let poolClosed = Code(base: .poolClosed)
        /// A value could not be sent (for example a string holding NUL).
        public static let encoding = Code(base: .encoding)
        /// A column could not be read as the requested Swift type.
        public static let decoding = Code(base: .decoding)
        /// In a pipeline, a statement that did not run because an earlier one in its unit failed.
        public static let pipelineAborted = Code(base: .pipelineAborted)
        /// libpq answered in a way the wrapper did not expect.
        public static let protocolError = Code(base: .protocolError)

        public var description: String { base.rawValue }
    }

    public var code: Code
    /// Five-character SQLSTATE from the server, if the server sent one.
    public var sqlState: String?
    /// The constraint the server names (unique, foreign key, check violations).
    public var constraint: String?
    public var table: String?
    public var column: String?
    /// The primary message. For server errors it may contain user data: not in `description`.
    public var message: String
    public var detail: String?
    public var hint: String?
    /// The SQL text that failed (placeholders only, never bound values).
    public var query: String?

    public init(
        code: Code, message: String, sqlState: String? = nil, constraint: String? = nil,
        table: String? = nil, column: String? = nil, detail: String? = nil, hint: String? = nil,
        query: String? = nil
    ) {
        self.code = code
        self.message = message
        self.sqlState = sqlState
        self.constraint = constraint
        self.table = table
        self.column = column
        self.detail = detail
        self.hint = hint
        self.query = query
    }

    /// `23505`: a unique or primary key constraint was violated.
    public var isUniqueViolation: Bool { sqlState == "23505" }
    /// `23503`: a foreign key constraint was violated.
    public var isForeignKeyViolation: Bool { sqlState == "23503" }
    /// `23514`: a CHECK constraint was violated.
    public var isCheckViolation: Bool { sqlState == "23514" }
    /// `40001` or `40P01`: the transaction lost a serialization race or a deadlock; retry it.
    public var isSerializationFailure: Bool { sqlState == "40001" || sqlState == "40P01" }
    /// The connection is gone (or never came): the database is unreachable right now.
    public var isConnectionError: Bool { code == .connectionFailed || code == .connectionLost }
    /// The database cannot do this right now, through no fault of the request: unreachable,
    /// the pool exhausted or shut down, out of resources (class 53: disk full, out of memory,
    /// too many connections), shutting down or starting (57P01–57P03), read-only (25006, a
    /// standby that was a primary), or a lost serialization race or deadlock (40001, 40P01).
    /// The same request may succeed later: a 503 with `Retry-After`, never a 500.
    public var isTransient: Bool {
        if isConnectionError || code == .poolTimeout || code == .poolClosed { return true }
        guard code == .server, let sqlState else { return false }
        return sqlState.hasPrefix("53") || ["57P01", "57P02", "57P03", "25006"].contains(sqlState) || isSerializationFailure
    }

    /// A server error of a class whose messages name objects, privileges and settings but
    /// never a row's values: feature not supported (0A), transaction state (25), rollback
    /// (40), syntax and access (42), resources (53, 54), object state (55) and operator
    /// intervention (57). Data exceptions (22) and integrity violations (23) can quote the
    /// values they refused, so their messages are not shown to people or logs.
    public var messageHasNoValues: Bool {
        guard code == .server, let sqlState, sqlState.count == 5 else { return false }
        return ["0A", "25", "40", "42", "53", "54", "55", "57"].contains(String(sqlState.prefix(2)))
    }

    public var description: String {
        var text = "PostgreSQL: \(code)"
        if let sqlState {
            text += " \(sqlState)"
            if let name = Self.sqlStateNames[sqlState] { text += " (\(name))" }
        }
        if let constraint { text += " on constraint \"\(constraint)\"" }
        if let table { text += " of table \"\(table)\"" }
        // Messages the wrapper writes itself hold no user data; the server's may.
        if code != .server { text += ": \(message)" }
        return text
    }

    public var debugDescription: String {
        var text = "PostgreSQL: \(code)"
        if let sqlState { text += " \(sqlState)" }
        text += ": \(message)"
        if let detail { text += "\nDETAIL: \(detail)" }
        if let hint { text += "\nHINT: \(hint)" }
        if let constraint { text += "\nCONSTRAINT: \(constraint)" }
        if let table { text += "\nTABLE: \(table)" }
        if let column { text += "\nCOLUMN: \(column)" }
        if let query { text += "\nQUERY: \(query)" }
        return text
    }

    static let sqlStateNames: [String: String] = [
        "23502": "not_null_violation", "23503": "foreign_key_violation",
        "23505": "unique_violation", "23514": "check_violation", "22P02": "invalid_text_representation",
        "22021": "character_not_in_repertoire", "22001": "string_data_right_truncation",
        "22003": "numeric_value_out_of_range", "42601": "syntax_error", "42P01": "undefined_table",
        "42703": "undefined_column", "42501": "insufficient_privilege", "40001": "serialization_failure",
        "40P01": "deadlock_detected", "57P01": "admin_shutdown", "57014": "query_canceled",
        "25P02": "in_failed_sql_transaction", "08006": "connection_failure", "53300": "too_many_connections",
        "0A000": "feature_not_supported", "42P07": "duplicate_table", "42883": "undefined_function",
    ]
}
