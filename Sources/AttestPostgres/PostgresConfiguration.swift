/// How to reach PostgreSQL.
public struct PostgresConfiguration: Sendable {
    /// A libpq connection URI (`postgresql://user@host/db?sslmode=require`) or conninfo string
    /// (`host=/run/postgresql dbname=attest`), as in `DATABASE_URL`. Empty: libpq's defaults
    /// and `PG*` environment variables.
    public var connectionString: String
    /// libpq keywords that override the connection string (for example `dbname` in tests).
    public var overrides: [String: String]
    /// Seconds libpq waits for a connection before giving up. Default 5.
    public var connectTimeoutSeconds: Int
    /// `application_name`, shown in `pg_stat_activity`. Default `attest`. The connection string may override it.
    public var applicationName: String
    /// A role every connection switches to with `SET ROLE` right after connecting (the
    /// application role that row-level security applies to). nil: stay the login role.
    public var role: String?
    /// How transaction settings (`TransactionSettings`) are made. Default `.automatic`.
    public var settingsStyle: TransactionSettings.Style

    public init(
        connectionString: String, overrides: [String: String] = [:], connectTimeoutSeconds: Int = 5,
        applicationName: String = "attest", role: String? = nil, settingsStyle: TransactionSettings.Style = .automatic
    ) {
        self.connectionString = connectionString
        self.overrides = overrides
        self.connectTimeoutSeconds = connectTimeoutSeconds
        self.applicationName = applicationName
        self.role = role
        self.settingsStyle = settingsStyle
    }

    /// Throws what a connection attempt would for a connection string libpq cannot parse,
    /// without connecting: for a URL that is only used later (a standby's).
    public func checkSyntax() throws { try LibPQConnection.validate(connectionString) }

    /// The keyword/value pairs for `PQconnectdbParams`, in the order libpq applies them: our
    /// defaults first, then the expanded connection string, then the overrides.
    ///
    /// Over TCP a connection whose peer vanished without a word (a network cut, a machine
    /// gone) must fail, not wait forever: data unacknowledged for the connect timeout ends it
    /// (`tcp_user_timeout`), and a connection waiting for an answer sends keepalive probes
    /// after 3 s of silence, so a query on a cut link fails within about 3 s plus the connect
    /// timeout. The connection string may set any of these otherwise.
    var keywordValues: [(String, String)] {
        var pairs = [
            ("connect_timeout", String(connectTimeoutSeconds)), ("application_name", applicationName),
            ("tcp_user_timeout", String(min(max(connectTimeoutSeconds, 1), 3_600) * 1000)), ("keepalives", "1"), ("keepalives_idle", "3"),
            ("keepalives_interval", "1"), ("keepalives_count", "3"),
        ]
        if !connectionString.isEmpty { pairs.append(("dbname", connectionString)) }
        pairs.append(contentsOf: overrides.sorted { $0.key < $1.key })
        return pairs
    }
}
