import AttestPostgres
import Foundation

/// Runs `body`, then shuts the client down whether or not it threw.
func withShutdown<Result: Sendable>(_ client: PostgresClient, _ body: () async throws -> Result) async throws -> Result {
    do {
        let result = try await body()
        await client.shutdown()
        return result
    } catch {
        await client.shutdown()
        throw error
    }
}

/// Runs `body` while `client` runs as a service (as in the server's service group), then
/// stops the service, which closes the client's connections, whether or not `body` threw.
func runningService<Result: Sendable>(_ client: PostgresClient, _ body: () async throws -> Result) async throws -> Result {
    try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await client.run() }
        do {
            let result = try await body()
            group.cancelAll()
            try await group.waitForAll()
            return result
        } catch {
            group.cancelAll()
            try? await group.waitForAll()
            throw error
        }
    }
}

/// Prints a JSON value (sorted keys) on one line.
func printJSON(_ value: some Encodable) {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    encoder.dateEncodingStrategy = .iso8601
    if let data = try? encoder.encode(value) { say(String(decoding: data, as: UTF8.self)) }
}

/// Writes a line to standard output at once (unbuffered), so a script or a person watching
/// through a pipe sees URLs and tokens as soon as they are printed.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// A file an operator named, read whole; else why not in the system's words (no such file, a
/// directory, permission denied) and what the command wants there: `what`, named after
/// `option` when the path came with one ("cannot read --settings x.json: …").
func readFile(_ path: String, _ what: String, option: String? = nil) throws(CLIError) -> Data {
    let named = (option.map { $0 + " " } ?? "") + path
    func refused(_ code: Int32) -> CLIError { CLIError("cannot read \(named): \(String(cString: strerror(code))); give \(what)") }
    let descriptor = open(path, O_RDONLY | O_CLOEXEC)
    guard descriptor >= 0 else { throw refused(errno) }
    let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
    var status = stat()
    guard fstat(descriptor, &status) == 0 else { throw refused(errno) }
    if status.st_mode & S_IFMT == S_IFDIR { throw refused(EISDIR) }
    do { return try handle.readToEnd() ?? Data() } catch { throw refused(EIO) }
}

/// A text file (JSON, CSV, PEM) as `readFile` reads it, less a UTF-8 byte order mark at its
/// start: Windows' Notepad and PowerShell 5's `Out-File -Encoding utf8` write one first, and
/// the JSON reader would stop at it ("unexpected character at byte 0"). Not for bytes a
/// signature covers (the VCI snapshot) nor binary files.
func readTextFile(_ path: String, _ what: String, option: String? = nil) throws(CLIError) -> Data {
    withoutByteOrderMark(try readFile(path, what, option: option))
}

/// `text` less a UTF-8 byte order mark at its start (`readTextFile`).
func withoutByteOrderMark(_ text: Data) -> Data {
    text.starts(with: [0xEF, 0xBB, 0xBF]) ? Data(text.dropFirst(3)) : text
}
