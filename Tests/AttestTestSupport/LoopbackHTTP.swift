import Foundation

/// A deliberately small HTTP/1.1 client over a plain socket, for talking to a server the test
/// started as a separate process: one request per connection (`Connection: close`).
public enum LoopbackHTTP {
    public struct Response: Sendable {
        public var status: Int
        public var headers: [String: String]
        public var body: String
    }

    /// A TCP connection to 127.0.0.1:`port` whose reads give up after `receiveTimeout` seconds;
    /// throws when nothing listens there. The caller closes it.
    public static func connect(port: Int, receiveTimeout: Int) throws -> Int32 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw TestEnvironmentError("socket() failed") }
        var timeout = timeval(tv_sec: receiveTimeout, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            close(descriptor)
            throw TestEnvironmentError("nothing listens on 127.0.0.1:\(port)")
        }
        return descriptor
    }

    /// Runs blocking socket work on a thread of its own (`offThePool`).
    public static func offThePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await AttestTestSupport.offThePool(work)
    }

    /// Sends a request to 127.0.0.1:`port`; throws when nothing listens there.
    public static func request(
        _ method: String = "GET", port: Int, path: String, headers: [String: String] = [:], body: String? = nil
    ) async throws -> Response {
        try await offThePool { try requestBlocking(method, port: port, path: path, headers: headers, body: body) }
    }

    static func requestBlocking(_ method: String, port: Int, path: String, headers: [String: String], body: String?) throws -> Response {
        let descriptor = try connect(port: port, receiveTimeout: 10)
        defer { close(descriptor) }
        var text = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        if let body { text += "Content-Length: \(body.utf8.count)\r\n" }
        text += "\r\n" + (body ?? "")
        let bytes = Array(text.utf8)
        var sent = 0
        while sent < bytes.count {
            let written = bytes[sent...].withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, 0) }
            guard written > 0 else { throw TestEnvironmentError("send failed") }
            sent += written
        }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16384)
        while true {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count <= 0 { break }
            received.append(contentsOf: buffer[0..<count])
        }
        let response = String(decoding: received, as: UTF8.self)
        guard let split = response.range(of: "\r\n\r\n") else { throw TestEnvironmentError("malformed HTTP response") }
        let head = response[..<split.lowerBound].components(separatedBy: "\r\n")
        let statusParts = head[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else { throw TestEnvironmentError("bad status line") }
        var fields: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return Response(status: status, headers: fields, body: String(response[split.upperBound...]))
    }

    /// Polls until `path` answers `status` (or `timeout` passes, then throws).
    @discardableResult
    public static func waitFor(
        port: Int, path: String, status: Int = 200, timeout: Duration = .seconds(60), while process: ChildProcess? = nil
    ) async throws -> Response {
        let deadline = ContinuousClock.now + timeout
        var last = "no answer"
        while ContinuousClock.now < deadline {
            if let response = try? await request(port: port, path: path) {
                if response.status == status { return response }
                last = "status \(response.status): \(response.body)"
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw TestEnvironmentError(
            "\(path) on port \(port) did not answer \(status) within \(timeout) (\(last)); "
                + "stderr: \(process?.stderr.suffix(3000) ?? "")")
    }

    /// A TCP port nothing listens on right now.
    public static func freePort() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(descriptor, pointer, length) == 0 && getsockname(descriptor, pointer, &length) == 0
            }
        }
        guard bound else { throw TestEnvironmentError("cannot find a free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
