import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import Synchronization

/// How an SMTP connection is secured: STARTTLS (port 587, required: a server that does not
/// offer it is refused), implicit TLS (465), or none (only to a host the operator allowed by
/// name: a relay on this machine or inside the campus's network).
public enum SMTPSecurity: String, Sendable, Hashable, CaseIterable {
    case starttls, tls, none
}

/// Where and how the `email` channel submits mail (RFC 6409).
public struct SMTPServer: Sendable, Hashable {
    public var host: String
    public var port: Int
    public var security: SMTPSecurity
    public var username: String?
    public var password: String?
    /// PEM certificates to trust instead of the system's (a campus's own CA, or a test's).
    public var trustRootsFile: String?
    /// Each step's deadline: connecting, the greeting, every command's reply, the message's.
    public var stepTimeout: Duration
    /// Connections open at once at most; more messages wait for one.
    public var maxConnections: Int

    public init(
        host: String, port: Int, security: SMTPSecurity, username: String? = nil, password: String? = nil,
        trustRootsFile: String? = nil, stepTimeout: Duration = .seconds(30), maxConnections: Int = 4
    ) {
        (self.host, self.port, self.security, self.username, self.password) = (host, port, security, username, password)
        (self.trustRootsFile, self.stepTimeout, self.maxConnections) = (trustRootsFile, stepTimeout, maxConnections)
    }
}

/// A server's reply: its code and its lines' texts.
public struct SMTPReply: Sendable, Equatable, CustomStringConvertible {
    public var code: Int
    public var lines: [String]

    /// The code and text, any address in it withheld: relays echo the recipient in their
    /// replies to RCPT ("550 5.1.1 <ana@example.edu>: Recipient address rejected"), and a
    /// reply goes into the server's log and stays with the event in the outbox.
    public var description: String { "\(code) \(Self.withholdingAddresses(lines.joined(separator: " / ")).prefix(300))" }
    var isPositive: Bool { (200..<400).contains(code) }

    /// `text` with each `local@domain` in it replaced by "(address withheld)": the run around
    /// an `@` of the characters an address may hold (`MailAddress.isValid`: printable, none of
    /// `<>()[]\",;`), on both sides, less the dots and colons that end it.
    static func withholdingAddresses(_ text: String) -> String {
        let scalars = Array(text.unicodeScalars)
        guard scalars.contains("@") else { return text }
        func isOfAddress(_ scalar: Unicode.Scalar) -> Bool {
            scalar.value > 0x20 && scalar.value != 0x7F && scalar != "@" && !scalar.properties.isWhitespace
                && !"<>()[]\\\",;".unicodeScalars.contains(scalar)
        }
        var withheld = String.UnicodeScalarView()
        var copied = 0, index = 0
        while index < scalars.count {
            guard scalars[index] == "@" else {
                index += 1
                continue
            }
            var start = index, end = index + 1
            while start > copied, isOfAddress(scalars[start - 1]) { start -= 1 }
            while end < scalars.count, isOfAddress(scalars[end]) { end += 1 }
            // "ana@example.edu... User unknown", "ana@example.edu: User unknown"
            while end > index + 1, scalars[end - 1] == "." || scalars[end - 1] == ":" { end -= 1 }
            guard start < index, end > index + 1 else {
                index += 1
                continue
            }
            withheld.append(contentsOf: scalars[copied..<start])
            withheld.append(contentsOf: "(address withheld)".unicodeScalars)
            (copied, index) = (end, end)
        }
        withheld.append(contentsOf: scalars[copied...])
        return String(withheld)
    }
}

/// Why a message was not submitted, in one line a person can act on.
public enum SMTPFailure: Error, Sendable, Equatable, CustomStringConvertible {
    case resolution(String)
    case connection(String)
    case tls(String)
    case startTLSNotOffered
    case plainRefused(String)
    case authentication(SMTPReply)
    /// The server refused a command: 4xx is worth trying again, 5xx is not.
    case refused(command: String, SMTPReply)
    case timedOut(String)
    case closed(String)
    case protocolError(String)

    /// A 5xx reply to the message itself: sending it again would be refused again.
    public var isPermanent: Bool {
        if case .refused(_, let reply) = self { return reply.code >= 500 }
        return false
    }

    public var description: String {
        switch self {
        case .resolution(let reason): "cannot resolve the SMTP host: \(reason)"
        case .connection(let reason): "cannot connect to the SMTP server: \(reason)"
        case .tls(let reason): "TLS failed: \(reason) (check the host name, the server's certificate, or trustRootsFile)"
        case .startTLSNotOffered:
            "the server does not offer STARTTLS, which \"security\": \"starttls\" requires: use port 465 with \"tls\", or a relay that offers it"
        case .plainRefused(let host):
            "\"security\": \"none\" sends mail and passwords in the clear: it is allowed only to a host the operator names (--allow-outbound-host \(host))"
        case .authentication(let reply): "authentication failed: the server answered \(reply) (check username and password)"
        case .refused(let command, let reply): "the server refused \(command): \(reply)"
        case .timedOut(let step): "the server did not answer in time (\(step))"
        case .closed(let step): "the server closed the connection (\(step))"
        case .protocolError(let reason): "the server's reply is not SMTP: \(reason)"
        }
    }
}

/// An SMTP submission client over SwiftNIO: a bounded pool of connections to one server,
/// each opened with the greeting, EHLO, STARTTLS or implicit TLS, and AUTH PLAIN or LOGIN,
/// then kept for the next message. Every step has its deadline; a connection that fails is
/// closed, and a reused one that the server had closed meanwhile is replaced once.
public final class SMTPClient: Sendable {
    public let server: SMTPServer
    let allowedHosts: Set<String>
    let group: any EventLoopGroup
    private let tls: NIOSSLContext?
    private let pool: Mutex<PoolState>
    /// The name the client gives in EHLO.
    let clientName: String

    /// `open` counts every connection this client holds, idle, in use or being opened: at most
    /// `maxConnections`. A sender takes an idle connection, else opens one while there is room,
    /// else waits; a connection given back goes to the first waiter (nil: the waiter may open
    /// one in its place), else is kept idle.
    private struct PoolState {
        var idle: [SMTPConnection] = []
        var open = 0
        var waiters: [CheckedContinuation<SMTPConnection?, Never>] = []
    }

    public init(
        server: SMTPServer, allowedHosts: Set<String> = [], clientName: String = "attest.invalid",
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) throws(SMTPFailure) {
        self.server = server
        self.allowedHosts = Set(allowedHosts.map { $0.lowercased() })
        self.group = group
        self.clientName = clientName
        self.pool = Mutex(PoolState())
        if server.security == .none {
            tls = nil
        } else {
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.minimumTLSVersion = .tlsv12
            if let file = server.trustRootsFile {
                do { configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(file)) } catch {
                    throw .tls("cannot read trustRootsFile \(file): \(error)")
                }
            }
            do { tls = try NIOSSLContext(configuration: configuration) } catch { throw .tls("\(error)") }
        }
    }

    /// Submits one message: `data` is the whole message, CRLF line ends, not yet dot-stuffed.
    public func send(from: String, to: [String], data: String) async throws(SMTPFailure) {
        if server.security == .none, !allowedHosts.contains(server.host.lowercased()) { throw .plainRefused(server.host) }
        var connection: SMTPConnection
        var reused = false
        if let idle = await acquire(), idle.isActive {
            connection = idle
            reused = true
        } else {
            // None idle (or the one kept was closed meanwhile): a new one in its slot.
            do { connection = try await open() } catch {
                release(nil)
                throw error
            }
        }
        do {
            try await connection.transaction(from: from, to: to, data: data)
            release(connection)
        } catch {
            // A refusal leaves the connection good for the next message once RSET is taken:
            // a campus with a few wrong addresses does not pay a new connection for each.
            if case .refused = error, await connection.reset() {
                release(connection)
                throw error
            }
            connection.close()
            // A kept connection the server dropped meanwhile: once more on a fresh one.
            guard reused, case .closed = error else {
                release(nil)
                throw error
            }
            do {
                connection = try await open()
                try await connection.transaction(from: from, to: to, data: data)
                release(connection)
            } catch {
                connection.close()
                release(nil)
                throw error
            }
        }
    }

    /// Says QUIT on every idle connection and closes them; later sends open new ones.
    public func shutdown() async {
        let idle = pool.withLock { state in
            defer { state.idle = [] }
            return state.idle
        }
        for connection in idle { await connection.quit() }
        pool.withLock { $0.open -= idle.count }
    }

    /// An idle connection to use, or nil: a slot to open a new one in (waiting for either).
    private func acquire() async -> SMTPConnection? {
        await withCheckedContinuation { (continuation: CheckedContinuation<SMTPConnection?, Never>) in
            let now = pool.withLock { state -> SMTPConnection?? in
                if let idle = state.idle.popLast() { return .some(idle) }
                if state.open < max(1, server.maxConnections) {
                    state.open += 1
                    return .some(nil)
                }
                state.waiters.append(continuation)
                return .none
            }
            if let now { continuation.resume(returning: now) }
        }
    }

    /// Gives a connection back to be kept (or, nil, its slot when it was closed): to the first
    /// waiter, else idle (or the slot freed).
    private func release(_ connection: SMTPConnection?) {
        let waiter = pool.withLock { state -> CheckedContinuation<SMTPConnection?, Never>? in
            if !state.waiters.isEmpty { return state.waiters.removeFirst() }
            if let connection { state.idle.append(connection) } else { state.open -= 1 }
            return nil
        }
        waiter?.resume(returning: connection)
    }

    private func open() async throws(SMTPFailure) -> SMTPConnection {
        let connection = try await SMTPConnection.connect(server: server, tls: tls, group: group)
        do {
            try await connection.greet(as: clientName, tls: tls)
            return connection
        } catch {
            connection.close()
            throw error
        }
    }
}

/// One connection: commands and their replies, one at a time.
final class SMTPConnection: Sendable {
    let channel: any Channel
    let replies: NIOLoopBound<SMTPReplyHandler>
    let server: SMTPServer
    /// Whether the server offered PIPELINING (RFC 2920) in its last EHLO reply.
    private let pipelining = Mutex(false)

    private init(channel: any Channel, handler: NIOLoopBound<SMTPReplyHandler>, server: SMTPServer) {
        (self.channel, self.replies, self.server) = (channel, handler, server)
    }

    /// Open, and not closed by this client (a close takes effect on the event loop later).
    var isActive: Bool { channel.isActive && !closing.withLock { $0 } }
    private let closing = Mutex(false)

    static func connect(server: SMTPServer, tls: NIOSSLContext?, group: any EventLoopGroup) async throws(SMTPFailure) -> SMTPConnection {
        let timeout = TimeAmount(server.stepTimeout)
        let host = server.host
        let implicitTLS = server.security == .tls
        let bootstrap = ClientBootstrap(group: group)
            .connectTimeout(timeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if implicitTLS, let tls {
                        let handler = try NIOSSLClientHandler(context: tls, serverHostname: SMTPConnection.sniName(host))
                        try channel.pipeline.syncOperations.addHandler(handler)
                    }
                    try channel.pipeline.syncOperations.addHandler(SMTPReplyHandler())
                }
            }
        let channel: any Channel
        do {
            channel = try await bootstrap.connect(host: host, port: server.port).get()
        } catch let error as NIOConnectionError {
            if error.connectionErrors.isEmpty, error.dnsAError != nil || error.dnsAAAAError != nil {
                throw .resolution("\(host): \(error.dnsAError.map { "\($0)" } ?? error.dnsAAAAError.map { "\($0)" } ?? "no address")")
            }
            if error.connectionErrors.contains(where: { if case .connectTimeout = $0.error as? ChannelError { true } else { false } }) {
                throw .timedOut("connecting to \(host):\(server.port)")
            }
            throw .connection("\(host):\(server.port): \(Self.words(error.connectionErrors.first?.error ?? error))")
        } catch let error as ChannelError {
            if case .connectTimeout = error { throw .timedOut("connecting to \(host):\(server.port)") }
            throw .connection("\(host):\(server.port): \(error)")
        } catch {
            throw .connection("\(host):\(server.port): \(Self.words(error))")
        }
        do {
            let handler = try await channel.eventLoop.submit {
                NIOLoopBound(try channel.pipeline.syncOperations.handler(type: SMTPReplyHandler.self), eventLoop: channel.eventLoop)
            }.get()
            return SMTPConnection(channel: channel, handler: handler, server: server)
        } catch {
            channel.close(promise: nil)
            throw .connection("\(error)")
        }
    }

    /// A socket's error in the words a person reads in one line: the system's for an errno
    /// ("Connection refused"), NIO's description otherwise.
    static func words(_ error: any Error) -> String {
        if let io = error as? IOError { return String(cString: strerror(io.errnoCode)) }
        return "\(error)"
    }

    /// The name for SNI and certificate checks: nil for an IP address (which SNI cannot carry).
    static func sniName(_ host: String) -> String? {
        (try? SocketAddress(ipAddress: host, port: 0)) == nil ? host : nil
    }

    /// Reads the greeting, says EHLO, starts TLS when asked, authenticates when configured.
    func greet(as name: String, tls: NIOSSLContext?) async throws(SMTPFailure) {
        let greeting: SMTPReply
        do { greeting = try await reply(step: "the greeting") } catch {
            // Over implicit TLS, a connection closed before the greeting closed in the handshake.
            if server.security == .tls, case .closed = error { throw .tls("the connection closed during the TLS handshake") }
            throw error
        }
        guard greeting.code == 220 else { throw .refused(command: "the connection", greeting) }
        var extensions = try await ehlo(name)
        if server.security == .starttls {
            guard extensions.contains(where: { $0.uppercased() == "STARTTLS" }), let tls else { throw .startTLSNotOffered }
            let ready = try await command("STARTTLS", shown: "STARTTLS")
            guard ready.code == 220 else { throw .refused(command: "STARTTLS", ready) }
            let host = server.host
            do {
                try await channel.eventLoop.submit { [channel] in
                    let handler = try NIOSSLClientHandler(context: tls, serverHostname: SMTPConnection.sniName(host))
                    try channel.pipeline.syncOperations.addHandler(handler, position: .first)
                }.get()
            } catch { throw .tls("\(error)") }
            // What the server offers over TLS (AUTH, often); closed before it answers: the
            // handshake failed, whichever side gave up first.
            do { extensions = try await ehlo(name) } catch {
                if case .closed = error { throw .tls("the connection closed during the TLS handshake") }
                throw error
            }
        }
        if let username = server.username {
            try await authenticate(username: username, password: server.password ?? "", extensions: extensions)
        }
        let offered = extensions.contains { $0.uppercased() == "PIPELINING" }
        pipelining.withLock { $0 = offered }
    }

    private func ehlo(_ name: String) async throws(SMTPFailure) -> [String] {
        let reply = try await command("EHLO \(name)", shown: "EHLO")
        guard reply.code == 250 else { throw .refused(command: "EHLO", reply) }
        return reply.lines.dropFirst().map { $0 }
    }

    private func authenticate(username: String, password: String, extensions: [String]) async throws(SMTPFailure) {
        var mechanisms: Set<String> = []
        for line in extensions {
            let words = line.uppercased().split(separator: " ")
            if words.first == "AUTH" { mechanisms.formUnion(words.dropFirst().map { String($0) }) }
        }
        if mechanisms.contains("PLAIN") || !mechanisms.contains("LOGIN") {
            let token = Data("\u{0}\(username)\u{0}\(password)".utf8).base64EncodedString()
            let reply = try await command("AUTH PLAIN \(token)", shown: "AUTH PLAIN")
            guard reply.code == 235 else { throw .authentication(reply) }
        } else {
            var reply = try await command("AUTH LOGIN", shown: "AUTH LOGIN")
            guard reply.code == 334 else { throw .authentication(reply) }
            reply = try await command(Data(username.utf8).base64EncodedString(), shown: "AUTH LOGIN's user name")
            guard reply.code == 334 else { throw .authentication(reply) }
            reply = try await command(Data(password.utf8).base64EncodedString(), shown: "AUTH LOGIN's password")
            guard reply.code == 235 else { throw .authentication(reply) }
        }
    }

    /// MAIL, RCPT for each recipient, DATA, the message dot-stuffed, its end.
    func transaction(from: String, to: [String], data: String) async throws(SMTPFailure) {
        if pipelining.withLock({ $0 }) { return try await pipelinedTransaction(from: from, to: to, data: data) }
        let mail = try await command("MAIL FROM:<\(from)>", shown: "MAIL FROM")
        guard mail.code == 250 else { throw .refused(command: "MAIL FROM", mail) }
        for recipient in to {
            let reply = try await command("RCPT TO:<\(recipient)>", shown: "RCPT TO")
            guard reply.code == 250 || reply.code == 251 else { throw .refused(command: "RCPT TO", reply) }
        }
        let start = try await command("DATA", shown: "DATA")
        guard start.code == 354 else { throw .refused(command: "DATA", start) }
        let accepted = try await write(Self.dotStuffed(data), step: "the message")
        guard accepted.code == 250 else { throw .refused(command: "the message", accepted) }
    }

    /// The same with MAIL, every RCPT and DATA in one write and their replies read in turn
    /// (RFC 2920), when the server offers PIPELINING: one round trip instead of three. When
    /// all three are taken the message follows in the same visit to the event loop.
    private func pipelinedTransaction(from: String, to: [String], data: String) async throws(SMTPFailure) {
        var commands = "MAIL FROM:<\(from)>\r\n"
        for recipient in to { commands += "RCPT TO:<\(recipient)>\r\n" }
        commands += "DATA\r\n"
        let replies = try await exchange(
            Array(commands.utf8), steps: ["MAIL FROM"] + Array(repeating: "RCPT TO", count: to.count) + ["DATA"],
            then: (Self.dotStuffed(data), "the message"), when: Self.takesTheMessage)
        guard let mail = replies.first, replies.count >= to.count + 2 else {
            throw .protocolError("\(replies.count) replies to \(to.count + 2) commands")
        }
        let start = replies[to.count + 1]
        let refusedRecipient = replies[1..<(to.count + 1)].first { $0.code != 250 && $0.code != 251 }
        guard mail.code == 250, refusedRecipient == nil else {
            let refusal: SMTPFailure =
                mail.code == 250 ? .refused(command: "RCPT TO", refusedRecipient ?? start) : .refused(command: "MAIL FROM", mail)
            // A server that would take the message anyway loses the connection: nothing is sent.
            if start.code == 354 { close() }
            throw refusal
        }
        guard start.code == 354 else { throw .refused(command: "DATA", start) }
        guard replies.count == to.count + 3 else { throw .protocolError("no reply to the message") }
        let accepted = replies[to.count + 2]
        guard accepted.code == 250 else { throw .refused(command: "the message", accepted) }
    }

    /// Whether a pipelined MAIL, its RCPTs and DATA were all taken: the message may follow.
    static func takesTheMessage(_ replies: [SMTPReply]) -> Bool {
        replies.first?.code == 250 && replies.last?.code == 354
            && replies.dropFirst().dropLast().allSatisfy { $0.code == 250 || $0.code == 251 }
    }

    /// Ends whatever transaction a refusal left open (RFC 5321 §4.1.1.5): true when the server
    /// took RSET and the connection can carry the next message.
    func reset() async -> Bool {
        guard isActive, let reply = try? await command("RSET", shown: "RSET") else { return false }
        return reply.code == 250
    }

    func quit() async {
        _ = try? await command("QUIT", shown: "QUIT")
        close()
    }

    func close() {
        closing.withLock { $0 = true }
        channel.close(promise: nil)
    }

    /// Lines that begin with a dot get another (RFC 5321 §4.5.2), and the end `CRLF.CRLF`.
    static func dotStuffed(_ data: String) -> [UInt8] {
        let bytes = Array(data.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + bytes.count / 64 + 5)
        var lineStart = true
        for (index, byte) in bytes.enumerated() {
            if lineStart, byte == 0x2E { out.append(0x2E) }
            out.append(byte)
            lineStart = byte == 0x0A && index > 0 && bytes[index - 1] == 0x0D
        }
        if !(bytes.count >= 2 && bytes[bytes.count - 2] == 0x0D && bytes[bytes.count - 1] == 0x0A) { out += [0x0D, 0x0A] }
        return out + [0x2E, 0x0D, 0x0A]
    }

    private func command(_ line: String, shown: String) async throws(SMTPFailure) -> SMTPReply {
        try await write(Array((line + "\r\n").utf8), step: shown)
    }

    private func write(_ bytes: [UInt8], step: String) async throws(SMTPFailure) -> SMTPReply {
        try await exchange(bytes, steps: [step])[0]
    }

    private func reply(step: String) async throws(SMTPFailure) -> SMTPReply {
        try await exchange(nil, steps: [step])[0]
    }

    /// Writes `bytes` (when any) and reads one reply for each of `steps` in turn (each within
    /// the step's deadline); then, when `proceed` says so of those replies, writes `then` and
    /// reads its reply too. All in one visit to the channel's event loop: a pipelined
    /// transaction's four replies cost one thread switch there and one back, not one each.
    private func exchange(
        _ bytes: [UInt8]?, steps: [String], then next: (bytes: [UInt8], step: String)? = nil,
        when proceed: @escaping @Sendable ([SMTPReply]) -> Bool = { _ in true }
    ) async throws(SMTPFailure) -> [SMTPReply] {
        let timeout = TimeAmount(server.stepTimeout)
        let replies = replies, channel = channel
        let future = channel.eventLoop.flatSubmit { () -> EventLoopFuture<[SMTPReply]> in
            if let bytes { channel.writeAndFlush(channel.allocator.buffer(bytes: bytes), promise: nil) }
            var read = channel.eventLoop.makeSucceededFuture([SMTPReply]())
            for step in steps {
                read = read.flatMap { got in replies.value.next(timeout: timeout, step: step).map { got + [$0] } }
            }
            guard let next else { return read }
            return read.flatMap { got in
                guard proceed(got) else { return channel.eventLoop.makeSucceededFuture(got) }
                channel.writeAndFlush(channel.allocator.buffer(bytes: next.bytes), promise: nil)
                return replies.value.next(timeout: timeout, step: next.step).map { got + [$0] }
            }
        }
        do { return try await future.get() } catch let error as SMTPFailure { throw error } catch { throw .connection("\(error)") }
    }
}

/// Reads replies (`250-first`, `250 last`) and hands each to the command waiting for it.
final class SMTPReplyHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    private var pending = ByteBuffer()
    private var lines: [String] = []
    private var ready: [SMTPReply] = []
    private var waiter: (promise: EventLoopPromise<SMTPReply>, timer: Scheduled<Void>?, step: String)?
    private var failure: SMTPFailure?
    private weak var context: ChannelHandlerContext?
    /// A reply's lines and each line's bytes are bounded: a hostile server cannot make the
    /// client hold more.
    static let maxLine = 2048, maxLines = 64

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func next(timeout: TimeAmount, step: String) -> EventLoopFuture<SMTPReply> {
        guard let context else {
            return MultiThreadedEventLoopGroup.singleton.any().makeFailedFuture(SMTPFailure.closed(step))
        }
        let promise = context.eventLoop.makePromise(of: SMTPReply.self)
        if !ready.isEmpty {
            promise.succeed(ready.removeFirst())
        } else if let failure {
            promise.fail(failure.closedWhile(step))
        } else {
            let timer = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) { [weak self] in
                guard let self, let waiter = self.waiter else { return }
                self.waiter = nil
                self.failure = .timedOut(step)
                waiter.promise.fail(SMTPFailure.timedOut(step))
                self.context?.close(promise: nil)
            }
            waiter = (promise, timer, step)
        }
        return promise.futureResult
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        pending.writeBuffer(&buffer)
        while let newline = pending.readableBytesView.firstIndex(of: 0x0A) {
            let length = newline - pending.readerIndex
            guard var line = pending.readString(length: length) else { break }
            pending.moveReaderIndex(forwardBy: 1)
            if line.hasSuffix("\r") { line.removeLast() }
            take(line)
        }
        if pending.readableBytes > Self.maxLine { fail(.protocolError("a line longer than \(Self.maxLine) bytes")) }
        pending.discardReadBytes()
    }

    private func take(_ line: String) {
        let bytes = Array(line.utf8)
        guard bytes.count >= 3, bytes.count <= Self.maxLine, bytes[0..<3].allSatisfy({ (0x30...0x39).contains($0) }),
            bytes.count == 3 || bytes[3] == 0x20 || bytes[3] == 0x2D
        else { return fail(.protocolError("\"\(line.prefix(80))\"")) }
        let code = Int(bytes[0] - 0x30) * 100 + Int(bytes[1] - 0x30) * 10 + Int(bytes[2] - 0x30)
        lines.append(bytes.count > 4 ? String(decoding: bytes[4...], as: UTF8.self) : "")
        guard lines.count <= Self.maxLines else { return fail(.protocolError("a reply of more than \(Self.maxLines) lines")) }
        guard bytes.count == 3 || bytes[3] == 0x20 else { return }  // "250-…": more lines follow
        let reply = SMTPReply(code: code, lines: lines)
        lines = []
        if let waiter {
            self.waiter = nil
            waiter.timer?.cancel()
            waiter.promise.succeed(reply)
        } else {
            ready.append(reply)
        }
    }

    private func fail(_ error: SMTPFailure) {
        if failure == nil { failure = error }
        if let waiter {
            self.waiter = nil
            waiter.timer?.cancel()
            waiter.promise.fail(error)
        }
        context?.close(promise: nil)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if error is NIOSSLError || error is BoringSSLError {
            fail(.tls("\(error)"))
        } else {
            fail(.connection("\(error)"))
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail(.closed(waiter?.step ?? "between messages"))
        context.fireChannelInactive()
    }
}

extension SMTPFailure {
    /// A connection that had already failed, as a later step sees it.
    fileprivate func closedWhile(_ step: String) -> SMTPFailure {
        if case .closed = self { return .closed(step) }
        return self
    }
}
