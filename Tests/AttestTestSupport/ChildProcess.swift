import Foundation

/// A child process for end-to-end tests of the `attest` binary: spawned with posix_spawn,
/// its stdout and stderr in files the test can read while it runs.
public final class ChildProcess: @unchecked Sendable {
    public let pid: pid_t
    public let stdoutPath: String
    public let stderrPath: String
    private var exitStatus: Int32?

    /// The `attest` binary `swift build` made next to the tests: on Linux in the running test
    /// executable's directory, wherever the build directory is (`--scratch-path`); elsewhere
    /// in this package's `.build/debug`.
    /// One key-encryption key for every `attest` this test process starts (base64, 32 bytes).
    public static let testKEK: String = {
        var generator = SystemRandomNumberGenerator()
        return Data((0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }).base64EncodedString()
    }()

    public static var attestBinary: String {
        let beside = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
            .appending(path: "attest").path
        if FileManager.default.isExecutableFile(atPath: beside) { return beside }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appending(path: ".build/debug/attest").path
    }

    /// Starts `arguments` (the first is the executable), in `directory` when given, with the
    /// test process's environment plus `environment` (a nil value removes a variable).
    public init(_ arguments: [String], environment: [String: String?] = [:], directory: String? = nil) throws {
        let base = FileManager.default.temporaryDirectory.appending(path: "attest-child-\(UUID().uuidString.prefix(8))").path
        stdoutPath = base + ".out"
        stderrPath = base + ".err"
        var merged = ProcessInfo.processInfo.environment
        // The key-encryption key `serve` and campus creation need, unless a test says otherwise.
        if merged["ATTEST_KEK"] == nil, merged["ATTEST_KEK_FILE"] == nil { merged["ATTEST_KEK"] = Self.testKEK }
        for (key, value) in environment { merged[key] = value }
        var command = arguments
        if let directory {
            command = ["/bin/sh", "-c", "cd \"$0\" && exec \"$@\"", directory] + arguments
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdoutPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, stderrPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let argv = command.map { strdup($0) } + [nil]
        let envp = merged.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, command[0], &actions, nil, argv, envp)
        guard result == 0 else { throw TestEnvironmentError("cannot start \(command[0]): \(String(cString: strerror(result)))") }
        self.pid = pid
    }

    /// Runs to completion and returns (status, stdout, stderr).
    public static func run(
        _ arguments: [String], environment: [String: String?] = [:], directory: String? = nil, timeout: Duration = .seconds(60)
    ) async throws -> (status: Int32, stdout: String, stderr: String) {
        let child = try ChildProcess(arguments, environment: environment, directory: directory)
        let status = try await child.wait(timeout: timeout)
        return (status, child.stdout, child.stderr)
    }

    public var stdout: String { (try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? "" }
    public var stderr: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    public func signal(_ number: Int32) { kill(pid, number) }

    /// Waits for the exit status; kills the process and throws after `timeout`.
    public func wait(timeout: Duration) async throws -> Int32 {
        if let exitStatus { return exitStatus }
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid {
                let code = status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
                exitStatus = code
                return code
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        throw TestEnvironmentError("process \(pid) did not exit within \(timeout); stderr: \(stderr.suffix(2000))")
    }

    deinit {
        if exitStatus == nil {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
        }
        try? FileManager.default.removeItem(atPath: stdoutPath)
        try? FileManager.default.removeItem(atPath: stderrPath)
    }
}
