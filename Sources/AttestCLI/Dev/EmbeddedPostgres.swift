import Foundation
import Logging

/// A private PostgreSQL cluster under one directory, run with the system's own `initdb` and
/// `pg_ctl`: data in `DIR/pgdata`, a Unix socket in `DIR/socket` (no TCP), the server log in
/// `DIR/log/postgres.log`. Run as root, the server runs as the `postgres` system user.
public struct EmbeddedPostgres: Sendable {
    public let directory: URL
    public let binDirectory: URL
    /// The system user the server runs as, when this process is root.
    public let serverUser: String?
    /// The cluster's superuser, made by initdb.
    public static let superuser = "postgres"

    public var clusterDirectory: URL { directory.appending(path: "pgdata") }
    public var socketDirectory: URL { directory.appending(path: "socket") }
    public var logFile: URL { directory.appending(path: "log/postgres.log") }

    /// Finds the server programs. `ATTEST_PG_BIN` overrides the search.
    public init(directory: URL, environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        self.directory = directory.standardizedFileURL
        self.binDirectory = try Self.locateBinaries(environment: environment)
        self.serverUser = geteuid() == 0 ? "postgres" : nil
        // The socket path must fit in sockaddr_un (108 bytes, terminator included).
        let socketPath = socketDirectory.path + "/.s.PGSQL.5432"
        guard socketPath.utf8.count < 104 else {
            throw CLIError(
                "the data directory \(self.directory.path) is too deep for a Unix socket path (\(socketPath.utf8.count) bytes, at most 103): "
                    + "pass a shorter --data-dir, such as /var/tmp/attest")
        }
    }

    static func locateBinaries(environment: [String: String]) throws -> URL {
        let fileManager = FileManager.default
        func hasPrograms(_ url: URL) -> Bool {
            fileManager.isExecutableFile(atPath: url.appending(path: "initdb").path)
                && fileManager.isExecutableFile(atPath: url.appending(path: "pg_ctl").path)
        }
        if let override = environment["ATTEST_PG_BIN"] {
            let url = URL(fileURLWithPath: override)
            guard hasPrograms(url) else { throw CLIError("ATTEST_PG_BIN=\(override) holds no initdb and pg_ctl") }
            return url
        }
        let root = URL(fileURLWithPath: "/usr/lib/postgresql")
        let versions = ((try? fileManager.contentsOfDirectory(atPath: root.path)) ?? [])
            .compactMap(Int.init).sorted(by: >)
        for version in versions {
            let bin = root.appending(path: "\(version)/bin")
            if hasPrograms(bin) { return bin }
        }
        for directory in (environment["PATH"] ?? "").split(separator: ":") {
            let bin = URL(fileURLWithPath: String(directory))
            if hasPrograms(bin) { return bin }
        }
        throw CLIError(
            "PostgreSQL's server programs (initdb, pg_ctl) are not installed: run `apt-get install postgresql` "
                + "(Debian/Ubuntu), or set ATTEST_PG_BIN to the directory that holds them")
    }

    /// The libpq URI of `database` in this cluster, as `user` (default: the superuser).
    public func connectionURL(database: String, user: String = Self.superuser) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let host = socketDirectory.path.addingPercentEncoding(withAllowedCharacters: allowed) ?? socketDirectory.path
        return "postgresql://\(user)@/\(database)?host=\(host)"
    }

    public var isInitialized: Bool {
        FileManager.default.fileExists(atPath: clusterDirectory.appending(path: "PG_VERSION").path)
    }

    /// Creates the cluster on first use. `durable: false` (tests) skips fsync entirely.
    public func initializeIfNeeded(logger: Logger, durable: Bool = true) throws {
        if isInitialized { return }
        let fileManager = FileManager.default
        for sub in [directory, socketDirectory, logFile.deletingLastPathComponent()] {
            try fileManager.createDirectory(at: sub, withIntermediateDirectories: true)
        }
        try fileManager.createDirectory(at: clusterDirectory, withIntermediateDirectories: true)
        try fileManager.setAttributes([.posixPermissions: 0o700], ofItemAtPath: clusterDirectory.path)
        try fileManager.setAttributes([.posixPermissions: 0o700], ofItemAtPath: socketDirectory.path)
        if let serverUser {
            for owned in [clusterDirectory, socketDirectory, logFile.deletingLastPathComponent()] {
                try runProgram("/bin/chown", [serverUser + ":", owned.path])
            }
            do {
                try runProgram("/usr/sbin/runuser", ["-u", serverUser, "--", "test", "-w", clusterDirectory.path])
            } catch {
                throw CLIError(
                    "the \(serverUser) user cannot reach \(directory.path) (a parent directory is not searchable by others): "
                        + "pass --data-dir somewhere it can, such as /var/tmp/attest")
            }
        }
        logger.info("creating a PostgreSQL cluster", metadata: ["directory": "\(clusterDirectory.path)"])
        try runServerProgram(
            "initdb",
            [
                "-D", clusterDirectory.path, "-U", Self.superuser, "-E", "UTF8", "--locale=C",
                "--auth-local=trust", "--auth-host=reject", "--no-instructions",
            ] + (durable ? [] : ["--no-sync"]))
        // Only the Unix socket in our own directory; nothing on the network.
        let quotedSocket = "'" + socketDirectory.path.replacingOccurrences(of: "'", with: "''") + "'"
        let settings = """

            # Added by `attest dev`: a private cluster reachable only through its own socket.
            listen_addresses = ''
            unix_socket_directories = \(quotedSocket)
            unix_socket_permissions = 0700
            max_connections = 100
            \(durable ? "" : "fsync = off\nsynchronous_commit = off\nfull_page_writes = off")

            """
        let configuration = clusterDirectory.appending(path: "postgresql.conf")
        let handle = try FileHandle(forWritingTo: configuration)
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(settings.utf8))
        try handle.close()
    }

    public var isRunning: Bool {
        (try? runServerProgram("pg_ctl", ["status", "-D", clusterDirectory.path])) != nil
    }

    /// Starts the server in its own session, so a Ctrl-C at the terminal reaches `attest`
    /// (which then stops it in order) and not the database directly.
    public func start(logger: Logger) throws {
        if isRunning {
            logger.info("PostgreSQL is already running in this data directory; reusing it")
            return
        }
        try runServerProgram(
            "pg_ctl", ["start", "-w", "-t", "60", "-D", clusterDirectory.path, "-l", logFile.path], newSession: true)
    }

    public func stop() throws {
        guard isRunning else { return }
        try runServerProgram("pg_ctl", ["stop", "-w", "-m", "fast", "-D", clusterDirectory.path])
    }

    /// Runs a PostgreSQL program, as the server user when this process is root.
    @discardableResult
    func runServerProgram(_ name: String, _ arguments: [String], newSession: Bool = false) throws -> String {
        let program = binDirectory.appending(path: name).path
        var command = [program] + arguments
        if let serverUser { command = ["/usr/sbin/runuser", "-u", serverUser, "--"] + command }
        if newSession { command = ["/usr/bin/setsid", "--wait"] + command }
        do {
            return try runProgram(command[0], Array(command.dropFirst()))
        } catch let failure as ProgramFailure {
            var hint = ""
            if name == "pg_ctl", arguments.first == "start" { hint = " (see \(logFile.path))" }
            throw CLIError("\(name) failed\(hint): \(failure.output.isEmpty ? "exit status \(failure.status)" : failure.output)")
        }
    }
}

struct ProgramFailure: Error {
    let status: Int32
    let output: String
}

/// Runs a program to completion; its output (stdout and stderr) is returned, or thrown with
/// the exit status when it fails. Output goes through a file, not a pipe: a daemon the
/// program starts (pg_ctl start) could otherwise hold the pipe open forever. Spawned with
/// posix_spawn and reaped with waitpid: the child is not a process group leader, so
/// `setsid` makes its new session without forking.
@discardableResult
func runProgram(_ executable: String, _ arguments: [String]) throws -> String {
    let outputPath = FileManager.default.temporaryDirectory.appending(path: "attest-\(UUID().uuidString).out").path
    defer { try? FileManager.default.removeItem(atPath: outputPath) }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    posix_spawn_file_actions_adddup2(&actions, 1, 2)
    let argv = ([executable] + arguments).map { strdup($0) } + [nil]
    let environment = ProcessInfo.processInfo.environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer {
        argv.forEach { free($0) }
        environment.forEach { free($0) }
    }
    var pid: pid_t = 0
    let spawned = posix_spawn(&pid, executable, &actions, nil, argv, environment)
    guard spawned == 0 else {
        throw ProgramFailure(status: -1, output: "cannot run \(executable): \(String(cString: strerror(spawned)))")
    }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
    let text = ((try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
    // WIFEXITED and WEXITSTATUS, which Swift does not import.
    let exited = status & 0x7f == 0
    let code = exited ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    guard code == 0 else {
        throw ProgramFailure(status: code, output: text.split(separator: "\n").suffix(3).joined(separator: " | "))
    }
    return text
}
