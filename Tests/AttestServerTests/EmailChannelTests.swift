import AttestPlugins
import AttestPluginsTesting
import AttestPostgres
import AttestServer
import AttestTestSupport
import Crypto
import Foundation
import Identity
import Notifications
import Surveys
import Synchronization
import Tenancy
import Testing

/// A real SMTP server on loopback for these tests: the PyPI `aiosmtpd` (Tests/Mail/smtp_server.py)
/// with STARTTLS or implicit TLS on a test certificate, AUTH, chosen replies, or one that never
/// answers. What it accepted is read back from its directory.
final class SMTPTestServer: Sendable {
    let process: ChildProcess
    let port: Int
    let directory: URL

    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appending(path: "Mail/smtp_server.py").path

    /// Where `certificate` is kept: removed as the test process exits.
    static let certificateDirectory = FileManager.default.temporaryDirectory.appending(path: "attest-smtp-cert-\(UUID().uuidString)")

    /// A self-signed certificate for `localhost` and 127.0.0.1, made once per test process.
    static let certificate: (cert: String, key: String) = {
        let directory = certificateDirectory
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(at: SMTPTestServer.certificateDirectory) }
        let (cert, key) = (directory.appending(path: "cert.pem").path, directory.appending(path: "key.pem").path)
        let openssl = Process()
        openssl.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        openssl.arguments = [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", cert, "-days",
            "2",
            "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
        ]
        openssl.standardError = FileHandle.nullDevice
        try? openssl.run()
        openssl.waitUntilExit()
        return (cert, key)
    }()

    init(_ arguments: [String]) async throws {
        directory = FileManager.default.temporaryDirectory.appending(path: "attest-smtp-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let process = try ChildProcess(["/usr/bin/env", "python3", "-u", Self.script, "--dir", directory.path] + arguments)
        self.process = process
        var found: Int?
        for _ in 0..<200 {
            if let line = process.stdout.split(separator: "\n").first(where: { $0.hasPrefix("READY ") }) {
                found = Int(line.dropFirst(6))
                break
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        guard let found else {
            process.signal(SIGKILL)
            throw TestFailure("the SMTP test server did not start: \(process.stderr)")
        }
        port = found
    }

    static func start(
        _ mode: String = "starttls", user: String? = nil, password: String? = nil, rcptReply: String? = nil, dataReply: String? = nil,
        pipelining: Bool = false, dataCommandReply: String? = nil
    ) async throws -> SMTPTestServer {
        var arguments = ["--mode", mode]
        if mode == "starttls" || mode == "tls" { arguments += ["--cert", certificate.cert, "--key", certificate.key] }
        if let user, let password { arguments += ["--user", user, "--password", password] }
        if let rcptReply { arguments += ["--rcpt-reply", rcptReply] }
        if let dataReply { arguments += ["--data-reply", dataReply] }
        if pipelining { arguments.append("--pipelining") }
        if let dataCommandReply { arguments += ["--data-command-reply", dataCommandReply] }
        return try await SMTPTestServer(arguments)
    }

    struct Received: Decodable {
        var from: String
        var to: [String]
        var data: String
        var tls: Bool
        var auth: Bool
        var pipelined: Bool
    }

    /// The messages accepted so far, in order.
    func received() throws -> [Received] {
        var messages: [Received] = []
        for number in 1... {
            guard let data = FileManager.default.contents(atPath: directory.appending(path: "\(number).json").path) else { break }
            messages.append(try JSONDecoder().decode(Received.self, from: data))
        }
        return messages
    }

    var connections: Int {
        Int((try? String(contentsOf: directory.appending(path: "connections"), encoding: .utf8)) ?? "") ?? 0
    }

    /// A server started as `start` starts one, given to `body`, and stopped in the test's own
    /// flow, passed or failed (a task started by a `defer` may never run before the test process
    /// ends, leaving the server running).
    static func running<T>(_ mode: String = "starttls", _ body: (SMTPTestServer) async throws -> T) async throws -> T {
        let server = try await start(mode)
        do {
            let result = try await body(server)
            await server.stop()
            return result
        } catch {
            await server.stop()
            throw error
        }
    }

    func stop() async {
        process.signal(SIGTERM)
        _ = try? await process.wait(timeout: .seconds(5))
        try? FileManager.default.removeItem(at: directory)
    }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The `email` channel (issue 62): the project's SMTP client against aiosmtpd (STARTTLS and
/// implicit TLS, AUTH, refusals, a server that hangs), each message read back by Python's
/// `email` package and its DKIM signature verified by `dkimpy`; and a member reminded at their
/// minute by email who unsubscribes in one click from the message's own link.
@Suite("Email channel")
struct EmailChannelTests {
    static let oracle = """
        import json, sys, dkim, email
        from email import policy
        case = json.load(open(sys.argv[1]))
        out = []
        for item in case['messages']:
            raw = item['data'].encode('latin-1')
            message = email.message_from_bytes(raw, policy=policy.default)
            parts = [part for part in message.walk() if not part.is_multipart()]
            record = case['record'].encode()
            out.append({
                'to': message['To'].addresses[0].addr_spec, 'from': message['From'].addresses[0].addr_spec,
                'subject': str(message['Subject']), 'language': message['Content-Language'],
                'types': [part.get_content_type() for part in parts], 'text': parts[0].get_content(),
                'unsubscribe': message['List-Unsubscribe'], 'unsubscribePost': message['List-Unsubscribe-Post'],
                'dkim': dkim.verify(raw, dnsfunc=lambda name, timeout=5: record) if case['record'] else None,
                'defects': [str(d) for part in message.walk() for d in part.defects],
            })
        print(json.dumps(out))
        """

    struct Read: Decodable {
        var to: String
        var from: String
        var subject: String
        var language: String?
        var types: [String]
        var text: String
        var unsubscribe: String?
        var unsubscribePost: String?
        var dkim: Bool?
        var defects: [String]
    }

    /// Each accepted message as Python's `email` and `dkimpy` read it.
    static func read(_ messages: [SMTPTestServer.Received], dkimRecord: String?) async throws -> [Read] {
        let input = FileManager.default.temporaryDirectory.appending(path: "attest-mail-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: input) }
        let payload: [String: Any] = ["messages": messages.map { ["data": $0.data] }, "record": dkimRecord ?? ""]
        try JSONSerialization.data(withJSONObject: payload).write(to: input)
        let result = try await ChildProcess.run(["/usr/bin/env", "python3", "-c", Self.oracle, input.path])
        #expect(result.status == 0, "python3: \(result.stderr)")
        return try JSONDecoder().decode([Read].self, from: Data(result.stdout.utf8))
    }

    static func settings(_ server: SMTPTestServer, security: String = "starttls", extra: [String: JSONValue] = [:]) -> JSONValue {
        var settings: [String: JSONValue] = [
            "host": .string("localhost"), "port": .number(Double(server.port)), "security": .string(security),
            "from": .string("Campus Attest <attest@demo.example.edu>"), "trustRootsFile": .string(SMTPTestServer.certificate.cert),
            "timeoutSeconds": .number(2),
        ]
        for (key, value) in extra { settings[key] = value }
        return .object(settings)
    }

    static func client(_ settings: JSONValue, allowedHosts: Set<String> = []) throws -> SMTPClient {
        try SMTPClient(server: try EmailSettings(settings).server, allowedHosts: allowedHosts)
    }

    /// An outbox worker that reaches members as the server's does, with links at `origin`.
    /// A campus "north" whose reminders go to the `terminal` channel.
    static func terminalCampus(clock: TestClock) async throws -> (TestServer, Campus) {
        let (server, north) = try await AttestationTests.setUp(clock: clock)
        try await CampusPluginStore(client: server.pool).enable(
            campus: north, kind: .sink, id: "terminal", settings: try MemberChannels.prepare(id: "terminal", settings: .null), actor: "test"
        )
        return (server, north)
    }

    static func worker(
        _ server: TestServer, clock: TestClock, metrics: ServerMetrics = ServerMetrics(), origin: String = "https://attest.example.edu",
        terminal: (@Sendable (String) -> Void)? = nil
    ) -> OutboxWorker {
        let keys = server.services.badges.keys
        return OutboxWorker(
            client: server.pool, registry: .builtin, http: NotificationTests.loopbackHTTP, logger: TestDatabase.testLogger,
            clock: clock.read, metrics: metrics.factory, kek: TestServer.kek, reminderAudience: .unattested,
            reach: MemberReach(
                recipients: .members, unsubscribeSecret: { try await keys.subjectKey(campus: $0) }, origin: origin, terminal: terminal))
    }

    static let plainMessage =
        "From: <attest@demo.example.edu>\r\nTo: <ana@demo.example.edu>\r\nSubject: hi\r\n\r\n.a line with a dot\r\nbye\r\n"

    @Test func startTLSAndAuthenticationDeliverOnOneKeptConnection() async throws {
        let smtp = try await SMTPTestServer.start(user: "attest", password: "s3cret pass")
        let before = smtp.connections  // aiosmtpd's own check that it listens
        let client = try Self.client(
            Self.settings(smtp, extra: ["username": .string("attest"), "password": .string("s3cret pass")]))
        for _ in 0..<3 { try await client.send(from: "attest@demo.example.edu", to: ["ana@demo.example.edu"], data: Self.plainMessage) }
        await client.shutdown()
        let received = try smtp.received()
        #expect(received.count == 3)
        #expect(received.allSatisfy { $0.tls && $0.auth && $0.to == ["ana@demo.example.edu"] })
        // Dot-stuffed on the wire, unstuffed by the server: the line is as it was written.
        #expect(received.first?.data.contains("\r\n.a line with a dot\r\n") == true)
        #expect(smtp.connections - before == 1)
        await smtp.stop()
    }

    /// More messages than connections, one after another and then all at once: every one is
    /// sent, over no more connections than `maxConnections` (a kept connection once counted
    /// twice, so the fifth message waited forever for a slot nobody would give back).
    @Test func thePoolSendsAnyNumberOverAtMostItsConnections() async throws {
        let smtp = try await SMTPTestServer.start()
        let before = smtp.connections
        let client = try Self.client(Self.settings(smtp, extra: ["maxConnections": .number(2)]))
        let from = "attest@demo.example.edu", message = Self.plainMessage
        // Unstructured, so a send that waits forever fails the test instead of hanging it.
        let sends = Task {
            for _ in 0..<6 { try await client.send(from: from, to: ["ana@demo.example.edu"], data: message) }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<12 { group.addTask { try await client.send(from: from, to: ["ana@demo.example.edu"], data: message) } }
                try await group.waitForAll()
            }
        }
        let deadline = ContinuousClock.now + .seconds(60)
        while try smtp.received().count < 18, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        #expect(try smtp.received().count == 18, "a send waited for a connection that was never given back")
        guard try smtp.received().count == 18 else { return }
        try await sends.value
        await client.shutdown()
        #expect((1...2).contains(smtp.connections - before))
        await smtp.stop()
    }

    /// A server that offers PIPELINING gets MAIL, RCPT and DATA in one write (RFC 2920), one
    /// that does not gets them one at a time; a refused recipient is the same refusal either way.
    @Test func pipelinedWhereOfferedAndARefusalIsTheSame() async throws {
        for offered in [true, false] {
            let smtp = try await SMTPTestServer.start(pipelining: offered)
            let client = try Self.client(Self.settings(smtp))
            for _ in 0..<3 { try await client.send(from: "attest@demo.example.edu", to: ["ana@demo.example.edu"], data: Self.plainMessage) }
            await client.shutdown()
            #expect(try smtp.received().map(\.pipelined) == [offered, offered, offered])
            await smtp.stop()

            // A refused recipient (permanent), and the message itself refused after its data
            // (transient; its reply read in the same visit when pipelined): nothing taken. The
            // address a relay echoes (as postfix and sendmail do) is withheld from the error,
            // which is logged and kept with the event.
            for (rcptReply, dataReply, permanent, step, code) in [
                (
                    "550 5.1.1 <ana@demo.example.edu>: Recipient address rejected: User unknown", nil, true, "RCPT TO",
                    "550 5.1.1 <(address withheld)>: Recipient address rejected: User unknown"
                ),
                (
                    "450 4.1.1 ana@demo.example.edu... User unknown, or to:ANA@demo.example.edu: try later", nil, false, "RCPT TO",
                    "450 4.1.1 (address withheld)... User unknown, or (address withheld): try later"
                ),
                (nil, "451 4.3.0 try again later", false, "the message", "451 4.3.0 try again later"),
            ] {
                let refusing = try await SMTPTestServer.start(rcptReply: rcptReply, dataReply: dataReply, pipelining: offered)
                let refused = try Self.client(Self.settings(refusing))
                do {
                    try await refused.send(from: "attest@demo.example.edu", to: ["ana@demo.example.edu"], data: Self.plainMessage)
                    Issue.record("a refused \(step) was taken")
                } catch {
                    #expect(error.isPermanent == permanent)
                    #expect(error.description.contains(step) && error.description.contains(code), "\(error.description)")
                    #expect(!error.description.lowercased().contains("ana@"), "\(error.description)")
                }
                await refused.shutdown()
                #expect(try refusing.received().isEmpty)
                await refusing.stop()
            }
        }
    }

    /// A refusal is one message's: the client resets the transaction the server still holds
    /// (here a DATA command refused after MAIL and RCPT were taken) and the next message goes
    /// over the same kept connection, neither refused as a nested MAIL (503, which would
    /// dead-letter a good message) nor paying a new connection and TLS handshake.
    @Test func aRefusalLeavesTheKeptConnectionReadyForTheNextMessage() async throws {
        for offered in [true, false] {
            let smtp = try await SMTPTestServer.start(pipelining: offered, dataCommandReply: "451 4.7.1 try DATA again later")
            let before = smtp.connections
            let client = try Self.client(Self.settings(smtp, extra: ["maxConnections": .number(1)]))
            do {
                try await client.send(from: "attest@demo.example.edu", to: ["ana@demo.example.edu"], data: Self.plainMessage)
                Issue.record("a refused DATA was taken")
            } catch {
                #expect(!error.isPermanent)
                #expect(error.description.contains("DATA") && error.description.contains("451"), "\(error.description)")
            }
            try await client.send(from: "attest@demo.example.edu", to: ["ben@demo.example.edu"], data: Self.plainMessage)
            await client.shutdown()
            #expect(try smtp.received().map(\.to) == [["ben@demo.example.edu"]])
            #expect(smtp.connections - before == 1, "one connection for both (pipelining offered: \(offered))")
            await smtp.stop()
        }
    }

    @Test func implicitTLSDelivers() async throws {
        let smtp = try await SMTPTestServer.start("tls")
        let client = try Self.client(Self.settings(smtp, security: "tls"))
        try await client.send(from: "attest@demo.example.edu", to: ["ana@demo.example.edu"], data: Self.plainMessage)
        await client.shutdown()
        #expect(try smtp.received().map(\.tls) == [true])
        await smtp.stop()
    }

    @Test func eachFailureSaysWhatWentWrongAndOnlyAFivehundredIsPermanent() async throws {
        func failure(_ settings: JSONValue, allowed: Set<String> = []) async throws -> SMTPFailure? {
            let client = try Self.client(settings, allowedHosts: allowed)
            defer { Task { await client.shutdown() } }
            do {
                try await client.send(from: "attest@demo.example.edu", to: ["ana@demo.example.edu"], data: Self.plainMessage)
                return nil
            } catch { return error }
        }
        // Plain SMTP only to a host the operator allowed by name.
        let plain = try await SMTPTestServer.start("plain")
        let refused = try await failure(Self.settings(plain, security: "none"))
        #expect(refused == .plainRefused("localhost"), "\(String(describing: refused))")
        #expect(refused?.description.contains("--allow-outbound-host localhost") == true)
        #expect(try plain.received().isEmpty)
        #expect(try await failure(Self.settings(plain, security: "none"), allowed: ["localhost"]) == nil)
        #expect(try plain.received().count == 1)
        // STARTTLS required, and this server does not offer it.
        #expect(try await failure(Self.settings(plain)) == .startTLSNotOffered)
        await plain.stop()

        let secured = try await SMTPTestServer.start(user: "attest", password: "right")
        var wrong = try await failure(Self.settings(secured, extra: ["username": .string("attest"), "password": .string("wrong")]))
        guard case .authentication(let reply)? = wrong else {
            throw TestFailure("not an authentication failure: \(String(describing: wrong))")
        }
        #expect(reply.code == 535 && wrong?.isPermanent == false)
        // A certificate nobody trusts: no trustRootsFile, so the system's roots.
        var untrusted = Self.settings(secured, extra: ["username": .string("attest"), "password": .string("right")])
        if case .object(var members) = untrusted {
            members["trustRootsFile"] = nil
            untrusted = .object(members)
        }
        wrong = try await failure(untrusted)
        guard case .tls? = wrong else { throw TestFailure("not a TLS failure: \(String(describing: wrong))") }
        #expect(try secured.received().isEmpty)
        await secured.stop()

        let unknown = try await SMTPTestServer.start(rcptReply: "550 5.1.1 no such mailbox")
        let permanent = try await failure(Self.settings(unknown))
        #expect(permanent?.isPermanent == true && permanent?.description.contains("550 5.1.1 no such mailbox") == true)
        await unknown.stop()
        let busy = try await SMTPTestServer.start(dataReply: "451 4.3.0 try again later")
        let transient = try await failure(Self.settings(busy))
        #expect(transient?.isPermanent == false && transient?.description.contains("451") == true)
        await busy.stop()

        // A server that accepts the connection and never answers: the greeting's deadline (1 s
        // here, 30 s when unset). The bound leaves room for a loaded CI machine: the client's
        // set-up (TLS context, resolution) once took 5 s there on top of the 1 s.
        let hanging = try await SMTPTestServer.start("hang")
        let started = ContinuousClock.now
        let silent = try await failure(Self.settings(hanging, extra: ["timeoutSeconds": .number(1)]))
        #expect(silent == .timedOut("the greeting"))
        #expect(ContinuousClock.now - started < .seconds(20))
        await hanging.stop()
        // Nobody listening.
        guard case .connection? = try await failure(Self.settings(hanging)) else { throw TestFailure("no connection failure") }
    }

    @Test func settingsAreCheckedAndTheDKIMKeyIsReadOnceFromItsFile() throws {
        let key = Curve25519.Signing.PrivateKey()
        let file = FileManager.default.temporaryDirectory.appending(path: "attest-dkim-\(UUID().uuidString).pem")
        try Data(key.pemRepresentation.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let prepared = try MemberChannels.prepare(
            id: "email",
            settings: .object([
                "host": .string("smtp.example.edu"), "from": .string("attest@example.edu"),
                "dkim": .object(["domain": .string("example.edu"), "selector": .string("attest"), "privateKeyFile": .string(file.path)]),
            ]))
        #expect(prepared["dkim"]?["privateKey"] == .string(key.pemRepresentation))
        #expect(prepared["dkim"]?["privateKeyFile"] == nil)
        #expect(prepared["events"] == .array([.string("reminder.due"), .string("guest.arrived")]))
        #expect(PluginRegistry().secretMembers(of: prepared, kind: .sink, id: "email").contains("dkim"))
        for (settings, words) in [
            (JSONValue.object(["from": .string("a@b.edu")]), "host is required"),
            (.object(["host": .string("smtp.example.edu")]), "from is required"),
            (.object(["host": .string("h"), "from": .string("a@b.edu"), "security": .string("ssl")]), "security must be"),
            (.object(["host": .string("h"), "from": .string("a@b.edu"), "port": .number(587.5)]), "port must be"),
            (.object(["host": .string("h"), "from": .string("a@b.edu"), "username": .string("u")]), "password is required"),
            (
                .object(["host": .string("h"), "from": .string("a@b.edu"), "events": .array([.string("badge.red")])]),
                "reminder.due and guest.arrived only"
            ),
        ] {
            #expect(throws: PluginSettingsError.self, "\(words)") { try MemberChannels.prepare(id: "email", settings: settings) }
            do { _ = try MemberChannels.prepare(id: "email", settings: settings) } catch {
                #expect(error.message.contains(words), "\(error.message)")
            }
        }
    }

    @Test func aMemberIsRemindedByEmailAtTheirMinuteAndUnsubscribesInOneClick() async throws {
        let clock = try TestClock("2026-11-30T12:00:00Z")  // 07:00 in New York
        let (server, north) = try await AttestationTests.setUp(clock: clock)
        let smtp = try await SMTPTestServer.start(user: "attest", password: "s3cret pass")
        let dkimKey = Curve25519.Signing.PrivateKey()
        let dkimFile = FileManager.default.temporaryDirectory.appending(path: "attest-dkim-\(UUID().uuidString).pem")
        try Data(dkimKey.pemRepresentation.utf8).write(to: dkimFile)
        defer { try? FileManager.default.removeItem(at: dkimFile) }
        let settings = try MemberChannels.prepare(
            id: "email",
            settings: Self.settings(
                smtp,
                extra: [
                    "username": .string("attest"), "password": .string("s3cret pass"), "replyTo": .string("health@demo.example.edu"),
                    "dkim": .object([
                        "domain": .string("demo.example.edu"), "selector": .string("attest"), "privateKeyFile": .string(dkimFile.path),
                    ]),
                ]))
        let plugins = CampusPluginStore(client: server.pool, kek: TestServer.kek)
        try await plugins.enable(
            campus: north, kind: .sink, id: "email", settings: settings,
            secret: PluginRegistry().secretMembers(of: settings, kind: .sink, id: "email"), actor: "test")
        // The password and the DKIM key are stored sealed, not in the clear.
        let stored = try await server.pool.query(
            "SELECT settings::text AS plain FROM campus_plugins WHERE kind = 'sink' AND plugin_id = 'email'", campus: north.id.rawValue)
        let plain: String = try stored[0].decode("plain")
        #expect(!plain.contains("s3cret") && !plain.contains("PRIVATE KEY"))

        let preferences = NotificationPreferenceStore(client: server.pool)
        let (ana, _) = try await server.user("ana@example.edu", at: north)
        try await preferences.set(campus: north, user: ana.id, NotificationPreferences(reminderMinute: 7 * 60 + 30), now: clock.read())
        let (jose, _) = try await server.user("jose@example.edu", at: north)
        try await preferences.set(
            campus: north, user: jose.id, NotificationPreferences(reminderMinute: 7 * 60 + 30, language: "es"), now: clock.read())
        let (quiet, _) = try await server.user("quiet@example.edu", at: north)
        try await preferences.set(
            campus: north, user: quiet.id, NotificationPreferences(email: false, reminderMinute: 7 * 60 + 30), now: clock.read())

        let metrics = ServerMetrics()
        let worker = Self.worker(server, clock: clock, metrics: metrics)
        try await server.run { api in
            try await worker.runOnce()
            #expect(try smtp.received().isEmpty)  // 07:00: nobody's minute yet
            try clock.set("2026-11-30T12:30:10Z")  // 07:30
            try await worker.runOnce()
            let received = try smtp.received()
            #expect(received.flatMap(\.to).sorted() == ["ana@example.edu", "jose@example.edu"])
            let read = try await Self.read(
                received, dkimRecord: "v=DKIM1; k=ed25519; p=" + dkimKey.publicKey.rawRepresentation.base64EncodedString())
            #expect(read.allSatisfy { $0.dkim == true && $0.defects.isEmpty && $0.types == ["text/plain", "text/html"] })
            #expect(read.allSatisfy { $0.from == "attest@demo.example.edu" && $0.unsubscribePost == "List-Unsubscribe=One-Click" })
            let english = try #require(read.first { $0.to == "ana@example.edu" })
            let spanish = try #require(read.first { $0.to == "jose@example.edu" })
            #expect(english.subject == "Reminder: today's health check at North" && english.language == "en", "\(english.subject)")
            #expect(spanish.subject.hasPrefix("Recordatorio") && spanish.language == "es")
            // Lines compared, as a "\r\n" is one Character.
            #expect(english.text.split(whereSeparator: \.isNewline).contains("https://attest.example.edu/c/north/"), "\(english.text)")
            // The one-click link, posted as a mail client does, with no session.
            let link = try #require(english.unsubscribe?.dropFirst().dropLast())
            #expect(link.hasPrefix("https://attest.example.edu/v1/campuses/north/unsubscribe?token="))
            let path = String(link.dropFirst("https://attest.example.edu".count))
            let posted = try await api.send(
                .post, path, template: UnsubscribeTests.path, json: "List-Unsubscribe=One-Click",
                contentType: "application/x-www-form-urlencoded")
            #expect(posted.status == 200, "\(posted.body)")
            #expect(try await preferences.preferences(campus: north.id, user: ana.id).email == false)
            #expect(try await preferences.preferences(campus: north.id, user: jose.id).email == true)
            let text = metrics.registry.emitToString()
            #expect(metric(text, #"attest_notifications_total{outcome="delivered"}"#) == 3)  // the quiet one: nothing to send
        }
        await smtp.stop()
    }

    @Test func theTerminalChannelPrintsTheReminderAsEmailWouldSendIt() async throws {
        let clock = try TestClock("2026-11-30T12:30:10Z")  // 07:30 in New York
        let (server, north) = try await Self.terminalCampus(clock: clock)
        let (ana, _) = try await server.user("ana@example.edu", at: north)
        try await NotificationPreferenceStore(client: server.pool).set(
            campus: north, user: ana.id, NotificationPreferences(reminderMinute: 7 * 60 + 30, language: "es"), now: clock.read())
        // A directory's user it gave no address (SCIM): theirs is in the reserved .invalid domain, never mailed.
        let kay = UUID()
        _ = try await server.pool.withTransaction(campus: north.id.rawValue) { connection in
            try await connection.query(
                "INSERT INTO users (campus_id, id, email, display_name) VALUES (\(north.id), \(kay), \(kay.lowercasedText + "@directory.invalid"), 'Kay')"
            )
        }
        try await NotificationPreferenceStore(client: server.pool).set(
            campus: north, user: UserID(kay), NotificationPreferences(reminderMinute: 7 * 60 + 30), now: clock.read())
        let printed = Mutex<[String]>([])
        let worker = Self.worker(
            server, clock: clock, origin: "http://127.0.0.1:8080", terminal: { text in printed.withLock { $0.append(text) } })
        try await server.run { _ in
            try await worker.runOnce()
            let output = printed.withLock { $0 }
            #expect(output.count == 1 && !output.contains { $0.contains("directory.invalid") }, "\(output)")
            let text = try #require(output.first)
            for expected in [
                "To: \"ana@example.edu\" <ana@example.edu>", "Subject: Recordatorio: el control de salud de hoy en North",
                "List-Unsubscribe: <http://127.0.0.1:8080/v1/campuses/north/unsubscribe?token=", "http://127.0.0.1:8080/c/north/",
            ] {
                #expect(text.contains(expected), "\(expected) in \(text)")
            }
            // Kay's reminder too, with nothing to send her.
            #expect(try await OutboxStore(client: server.pool).list(campus: north.id, state: .delivered).count == 2)

            // A server that is not `attest dev`'s prints nobody's address: the channel is refused.
            let south = try await server.campus("south")
            try await CampusPluginStore(client: server.pool).enable(
                campus: south, kind: .sink, id: "terminal", settings: try MemberChannels.prepare(id: "terminal", settings: .null),
                actor: "test")
            let (bo, _) = try await server.user("bo@example.edu", at: south)
            try await NotificationPreferenceStore(client: server.pool).set(
                campus: south, user: bo.id, NotificationPreferences(reminderMinute: 7 * 60 + 30), now: clock.read())
            try await Self.worker(server, clock: clock).runOnce()
            let waiting = try await OutboxStore(client: server.pool).list(campus: south.id, state: .pending)
            #expect(waiting.count == 1 && waiting.first?.lastError?.contains("attest dev only") == true, "\(waiting)")
            #expect(printed.withLock { $0.count } == 1)
        }
    }

    /// A reminder sent late (the relay refused it for a while, no server ran) is not sent once
    /// the member's quiet hours have begun, nor once its day has ended.
    @Test func aLateReminderIsNotSentInQuietHoursNorAfterItsDay() async throws {
        let clock = try TestClock("2026-11-29T12:30:10Z")  // 07:30 in New York
        let (server, north) = try await Self.terminalCampus(clock: clock)
        let preferences = NotificationPreferenceStore(client: server.pool)
        let (ana, _) = try await server.user("ana@example.edu", at: north)
        try await preferences.set(campus: north, user: ana.id, NotificationPreferences(reminderMinute: 7 * 60 + 30), now: clock.read())
        let (bo, _) = try await server.user("bo@example.edu", at: north)
        try await preferences.set(  // quiet from 07:40 to 09:00
            campus: north, user: bo.id, NotificationPreferences(reminderMinute: 7 * 60 + 30, quietHours: (460, 540)), now: clock.read())
        let printed = Mutex<[String]>([])
        let worker = Self.worker(server, clock: clock, terminal: { text in printed.withLock { $0.append(text) } })
        let reminders = Reminders(client: server.pool, audience: .unattested)
        let outbox = OutboxStore(client: server.pool)
        try await server.run { _ in
            #expect(try await reminders.run(campuses: [north], at: clock.read()) == ["north": 2])
            try clock.set("2026-11-29T12:45:00Z")  // 07:45: Bo's quiet hours have begun
            try await worker.runOnce()
            #expect(printed.withLock { $0 }.map { $0.contains("ana@example.edu") } == [true])
            #expect(try await outbox.list(campus: north.id, state: .delivered).count == 2)

            try clock.set("2026-11-30T12:30:10Z")  // the next day's reminders, sent only on the day after
            #expect(try await reminders.run(campuses: [north], at: clock.read()) == ["north": 2])
            try clock.set("2026-12-01T12:00:00Z")  // 07:00 on 1 December
            try await worker.runOnce()
            #expect(printed.withLock { $0.count } == 1)
            #expect(try await outbox.list(campus: north.id, state: .delivered).count == 4)
        }
    }

    /// The unsubscribe keys are derived once a campus and again when its secret changes: a
    /// reminder after a change carries a token the new secret reads and the old one does not.
    @Test func aReminderAfterTheSecretChangesCarriesATokenOfTheNewSecret() async throws {
        let clock = try TestClock("2026-11-30T12:30:10Z")  // 07:30 in New York
        let (server, north) = try await Self.terminalCampus(clock: clock)
        let preferences = NotificationPreferenceStore(client: server.pool)
        let (ana, _) = try await server.user("ana@example.edu", at: north)
        let (bo, _) = try await server.user("bo@example.edu", at: north)
        try await preferences.set(campus: north, user: ana.id, NotificationPreferences(reminderMinute: 7 * 60 + 30), now: clock.read())
        try await preferences.set(campus: north, user: bo.id, NotificationPreferences(reminderMinute: 7 * 60 + 31), now: clock.read())
        let first = SymmetricKey(size: .bits256), second = SymmetricKey(size: .bits256)
        let secret = Mutex(first), printed = Mutex<[String]>([])
        let worker = OutboxWorker(
            client: server.pool, registry: .builtin, http: NotificationTests.loopbackHTTP, logger: TestDatabase.testLogger,
            clock: clock.read, kek: TestServer.kek, reminderAudience: .unattested,
            reach: MemberReach(
                recipients: .members, unsubscribeSecret: { _ in secret.withLock { $0 } }, origin: "https://attest.example.edu",
                terminal: { text in printed.withLock { $0.append(text) } }))
        @Sendable func token(_ text: String) throws -> String {
            let start = try #require(text.range(of: "unsubscribe?token=")).upperBound
            return String(text[start...].prefix { $0 != ">" && !$0.isWhitespace })
        }
        try await server.run { _ in
            try await worker.runOnce()
            clock.advance(by: 60)
            secret.withLock { $0 = second }
            try await worker.runOnce()
            let output = printed.withLock { $0 }
            try #require(output.count == 2, "\(output)")
            let (anas, bos) = (try token(output[0]), try token(output[1]))
            #expect(UnsubscribeTokens(campusSecret: first).read(anas, campus: north.id)?.user == ana.id)
            #expect(UnsubscribeTokens(campusSecret: second).read(bos, campus: north.id)?.user == bo.id)
            #expect(UnsubscribeTokens(campusSecret: first).read(bos, campus: north.id) == nil)
        }
    }

    @Test func notifyTestSendsOneReminderNowAndSaysWhatFailed() async throws {
        let cli = try await AdminCLITests.cli()
        #expect(
            try await cli.run("campus", "create", "north", "--name", "North", "--timezone", "UTC", "--email-domain", "example.edu").status
                == 0)
        #expect(try await cli.run("user", "add", "north", "ana@example.edu", "--name", "Ana Ruiz").status == 0)
        let smtp = try await SMTPTestServer.start(user: "attest", password: "s3cret pass")
        let file = FileManager.default.temporaryDirectory.appending(path: "attest-email-\(UUID().uuidString.prefix(8)).json")
        defer { try? FileManager.default.removeItem(at: file) }
        func enable(password: String) async throws {
            let settings = Self.settings(smtp, extra: ["username": .string("attest"), "password": .string(password)])
            try JSONEncoder().encode(settings).write(to: file)
            let enabled = try await cli.run("plugin", "enable", "north", "sink", "email", "--settings", file.path)
            #expect(enabled.status == 0, "\(enabled.stderr)")
        }
        try await enable(password: "s3cret pass")
        let sent = try await cli.run("notify", "test", "north", "ana@example.edu", "--public-url", "https://attest.example.edu/")
        #expect(sent.status == 0 && sent.stdout.contains("through localhost:\(smtp.port) (starttls)"), "\(sent.stdout) \(sent.stderr)")
        let received = try smtp.received()
        #expect(received.count == 1 && received.first?.to == ["ana@example.edu"])
        #expect(received.first?.data.contains("List-Unsubscribe: <https://attest.example.edu/v1/campuses/north/unsubscribe?token=") == true)
        AdminCLITests.expectFailure(try await cli.run("notify", "test", "north", "bob@example.edu"), "is no member of north")
        try await enable(password: "wrong")
        AdminCLITests.expectFailure(try await cli.run("notify", "test", "north", "ana@example.edu"), "not sent: authentication failed")
        await smtp.stop()
        AdminCLITests.expectFailure(
            try await cli.run("notify", "test", "north", "ana@example.edu", "--channel", "push"), "has no web-push channel")
        #expect(
            try await cli.run("plugin", "enable", "north", "sink", "web-push", "--settings", #"{"subject": "mailto:health@example.edu"}"#)
                .status
                == 0)
        AdminCLITests.expectFailure(
            try await cli.run("notify", "test", "north", "ana@example.edu", "--channel", "push"), "has subscribed no browser")
    }

    @Test func aPermanentRefusalIsDeadLetteredAndCountedAndATemporaryOneRetried() async throws {
        let clock = try TestClock("2026-11-30T12:30:10Z")
        let (server, north) = try await AttestationTests.setUp(clock: clock)
        let smtp = try await SMTPTestServer.start(rcptReply: "550 5.1.1 <ana@example.edu>: no such mailbox")
        try await CampusPluginStore(client: server.pool).enable(
            campus: north, kind: .sink, id: "email", settings: try MemberChannels.prepare(id: "email", settings: Self.settings(smtp)),
            actor: "test")
        let (ana, _) = try await server.user("ana@example.edu", at: north)
        try await NotificationPreferenceStore(client: server.pool).set(
            campus: north, user: ana.id, NotificationPreferences(reminderMinute: 7 * 60 + 30), now: clock.read())
        let metrics = ServerMetrics()
        let worker = Self.worker(server, clock: clock, metrics: metrics)
        try await server.run { _ in
            try await worker.runOnce()
            let dead = try await OutboxStore(client: server.pool).list(campus: north.id, state: .dead)
            #expect(
                dead.count == 1 && dead.first?.lastError?.contains("550 5.1.1 <(address withheld)>: no such mailbox") == true, "\(dead)")
            #expect(metric(metrics.registry.emitToString(), #"attest_notifications_total{outcome="dead"}"#) == 1)
            // What an operator sees and does: the dead letter with its event id and the server's
            // reply, as text and as JSON, then that one event put back in line.
            let cli = AdminCLITests.CLI(database: server.database)
            let id = try #require(dead.first?.id.lowercasedText)
            let listed = try await cli.run("outbox", "dead", "north")
            #expect(listed.status == 0 && listed.stdout.split(separator: "\n").count == 1, "\(listed.stdout) \(listed.stderr)")
            #expect(listed.stdout.contains("reminder.due  email  \(id)  attempts 1  last error: ") && listed.stdout.contains("550 5.1.1"))
            let json = try await cli.run("outbox", "dead", "north", "--json")
            let entries = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
            #expect(entries.count == 1 && entries.first?["id"] as? String == id && entries.first?["sink"] as? String == "email")
            // Dead when the database said so (its own clock, not the test's): an instant of the last minutes.
            let deadAt = (entries.first?["deadAt"] as? String).flatMap {
                (try? Date($0, strategy: .iso8601))
                    ?? (try? Date($0, strategy: .iso8601.year().month().day().time(includingFractionalSeconds: true)))
            }
            #expect(deadAt.map { abs($0.timeIntervalSinceNow) < 600 } == true, "\(entries)")
            #expect(entries.first?["deliveredAt"] == nil)
            await smtp.stop()
            let retried = try await cli.run("outbox", "retry", "north", "--event", id)
            #expect(retried.stdout.contains("Retrying 1 dead letter at north."), "\(retried.stdout) \(retried.stderr)")
            // Nobody answering: tried again later, not dead.
            try await worker.runOnce()
            let pending = try await OutboxStore(client: server.pool).list(campus: north.id, state: .pending)
            #expect(pending.count == 1 && pending.first?.lastError?.contains("cannot connect") == true, "\(pending)")
            let waiting = try await cli.run("outbox", "list", "north")
            #expect(
                waiting.stdout.contains("\(id)  attempts 1  last error: ")
                    && waiting.stdout.contains("cannot connect to the SMTP server: localhost:\(smtp.port): Connection refused\n"),
                "\(waiting.stdout)"
            )
            #expect(try await cli.run("outbox", "dead", "north").stdout.contains("No dead notifications at north."))
        }
    }
}
