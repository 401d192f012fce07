import Foundation

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
            let plain =
                !setting.name.isEmpty
                && setting.name.utf8.allSatisfy {
                    ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x5F || $0 == 0x2E
                }
            var sql = SQL(unsafeSQL: "SET LOCAL \(setting.name) = " + quoteLiteral(setting.value))
            if !plain {
                sql.encodingFailure = PostgresError(
                    code: .encoding, message: "a setting's name must be letters, digits, '_' and '.': \(setting.name)")
            } else if setting.value.utf8.contains(0) {
                sql.encodingFailure = PostgresError(
                    code: .encoding, message: "the value of setting \(setting.name) contains a NUL character")
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
