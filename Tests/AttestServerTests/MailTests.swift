import AttestTestSupport
import Crypto
import Foundation
import Notifications
import Testing
import _CryptoExtras

/// Messages as the `email` sink writes them, read back by Python's `email` package (parts,
/// charsets, encoded words, headers) and their DKIM signatures verified by the PyPI `dkimpy`
/// with the public key answered as DNS would: implementations nobody here wrote.
@Suite("Mail messages and DKIM")
struct MailTests {
    static let oracle = """
        import json, sys, dkim, email
        from email import policy
        case = json.load(open(sys.argv[1]))
        out = []
        for item in case['messages']:
            raw = item['raw'].encode('ascii')
            message = email.message_from_bytes(raw, policy=policy.default)
            parts = [part for part in message.walk() if not part.is_multipart()]
            record = item['record'].encode()
            verified = dkim.verify(raw, dnsfunc=lambda name, timeout=5: record) if item['record'] else None
            out.append({
                'from': str(message['From']), 'fromName': message['From'].addresses[0].display_name,
                'to': message['To'].addresses[0].addr_spec, 'subject': str(message['Subject']),
                'types': [part.get_content_type() for part in parts], 'charsets': [part.get_content_charset() for part in parts],
                'contents': [part.get_content() for part in parts], 'keys': sorted(set(k.lower() for k in message.keys())),
                'unsubscribe': message['List-Unsubscribe'], 'unsubscribePost': message['List-Unsubscribe-Post'],
                'messageId': message['Message-ID'], 'date': message['Date'].datetime.isoformat() if message['Date'] else None,
                'defects': [str(d) for part in message.walk() for d in part.defects], 'dkim': verified,
                'longest': max(len(line) for line in raw.split(b'\\r\\n')),
            })
        print(json.dumps(out))
        """

    static func message(subject: String, name: String) -> MailMessage {
        let text = """
            Good morning, \(name)!
            Answer today's questions before 10:00: https://attest.example.edu/c/demo/
            A line with = signs, tabs\tand trailing spaces   
            \(String(repeating: "A long line that goes on and on, ", count: 8))ünïcødé ✓ 頭痛 — end.
            .
            Unsubscribe: https://attest.example.edu/v1/campuses/demo/unsubscribe?token=abc
            """
        return MailMessage(
            from: MailAddress(name: "Campus Attest, Demo University", address: "attest@demo.example.edu"),
            to: MailAddress(name: name, address: "ana@demo.example.edu"), subject: subject, text: text,
            html: "<p>Good morning, \(name)!</p><p><a href=\"https://attest.example.edu/c/demo/\">Answer today's questions</a></p>",
            extraHeaders: [
                (
                    "List-Unsubscribe",
                    "<https://attest.example.edu/v1/campuses/demo/unsubscribe?token=\(String(repeating: "t", count: 90))>"
                ),
                ("List-Unsubscribe-Post", "List-Unsubscribe=One-Click"),
            ],
            messageID: MailMessage.newMessageID(domain: "demo.example.edu"), date: Date(timeIntervalSince1970: 1_795_860_000))
    }

    @Test func pythonsEmailReadsEveryPartAndDkimpyVerifiesBothAlgorithms() async throws {
        let ed25519 = DKIMSigner(domain: "demo.example.edu", selector: "attest", key: .ed25519(Curve25519.Signing.PrivateKey()))
        let rsa = DKIMSigner(domain: "demo.example.edu", selector: "attest-rsa", key: .rsa(try _RSA.Signing.PrivateKey(keySize: .bits2048)))
        let cases: [(MailMessage, DKIMSigner?)] = [
            (Self.message(subject: "Your daily check", name: "Ana Ruiz"), ed25519),
            (Self.message(subject: "Recordatorio: ¿cómo se siente hoy? Responda antes de las 10:00, por favor ✓", name: "José Núñez"), rsa),
            (Self.message(subject: "Injected\r\nBcc: everyone@example.edu", name: "Evil\r\nBcc: x@example.edu"), nil),
        ]
        let now = Date(timeIntervalSince1970: 1_795_860_000)
        let rendered = try cases.map { message, signer in
            (try message.signed(by: signer, boundary: MailMessage.newBoundary(), now: now), signer?.dnsRecord ?? "")
        }
        let input = FileManager.default.temporaryDirectory.appending(path: "mail-\(UUID().uuidString.prefix(8)).json")
        try JSONSerialization.data(withJSONObject: ["messages": rendered.map { ["raw": $0.0, "record": $0.1] }]).write(to: input)
        defer { try? FileManager.default.removeItem(at: input) }
        let read = try await ChildProcess.run(["/usr/bin/env", "python3", "-c", Self.oracle, input.path])
        #expect(read.status == 0, "python3: \(read.stderr)")
        let out = try #require(try JSONSerialization.jsonObject(with: Data(read.stdout.utf8)) as? [[String: Any]])
        #expect(out.count == 3)
        for (index, (message, signer)) in cases.enumerated() where index < out.count {
            let parsed = out[index]
            #expect(parsed["defects"] as? [String] == [], "\(parsed["defects"] ?? "")")
            #expect(parsed["types"] as? [String] == ["text/plain", "text/html"] && parsed["charsets"] as? [String] == ["utf-8", "utf-8"])
            let contents = (parsed["contents"] as? [String]) ?? []
            // Line ends as CRLF on both sides: the message's hard breaks are CRLF.
            func lines(_ text: String?) -> String? { text?.replacingOccurrences(of: "\r\n", with: "\n") }
            #expect(lines(contents.first) == lines(message.text), "\(contents.first ?? "")")
            #expect(lines(contents.last) == lines(message.html))
            #expect(parsed["to"] as? String == "ana@demo.example.edu")
            #expect(parsed["unsubscribe"] as? String == message.extraHeaders[0].value)
            #expect(parsed["unsubscribePost"] as? String == "List-Unsubscribe=One-Click")
            #expect(parsed["date"] as? String == "2026-11-28T10:00:00+00:00")
            #expect(parsed["dkim"] as? Bool == (signer == nil ? nil : true), "DKIM of message \(index)")
            #expect((parsed["longest"] as? Int ?? 999) <= 998)
        }
        #expect(out[0]["fromName"] as? String == "Campus Attest, Demo University" && out[0]["subject"] as? String == "Your daily check")
        #expect(out[1]["subject"] as? String == "Recordatorio: ¿cómo se siente hoy? Responda antes de las 10:00, por favor ✓")
        // A CR or LF in a name or subject is a space: no header is added.
        #expect(
            out[2]["subject"] as? String == "Injected Bcc: everyone@example.edu"
                && out[2]["fromName"] as? String == "Campus Attest, Demo University")
        #expect(!((out[2]["keys"] as? [String]) ?? []).contains("bcc"))

        // Altered after signing, the signature no longer holds.
        let tampered = rendered[0].0.replacingOccurrences(of: "Good morning", with: "Good evening")
        try JSONSerialization.data(withJSONObject: ["messages": [["raw": tampered, "record": rendered[0].1]]]).write(to: input)
        let again = try await ChildProcess.run(["/usr/bin/env", "python3", "-c", Self.oracle, input.path])
        #expect((try JSONSerialization.jsonObject(with: Data(again.stdout.utf8)) as? [[String: Any]])?.first?["dkim"] as? Bool == false)
    }

    @Test func quotedPrintableKeepsLinesShortAndAddressesAreChecked() throws {
        let text = String(repeating: "é", count: 100) + " \n" + String(repeating: "=", count: 40) + "\t"
        let message = MailMessage(
            from: MailAddress(address: "a@example.edu"), to: MailAddress(address: "b@example.edu"), subject: "s", text: text, html: "",
            messageID: "<x@example.edu>", date: Date())
        for line in message.body(boundary: "b").components(separatedBy: "\r\n") {
            #expect(line.utf8.count <= 76, "\(line)")
            #expect(!line.hasSuffix(" ") && !line.hasSuffix("\t"))
        }
        for (address, valid) in [
            ("ana@example.edu", true), ("ana", false), ("@example.edu", false), ("a@b@c", false), ("ana ruiz@example.edu", false),
            ("ana@example.edu>\r\nBcc: x", false), ("añа@example.edu", false),
        ] {
            #expect(MailAddress.isValid(address) == valid, "\(address)")
        }
        #expect(throws: DKIMError.self) { try DKIMSigner.key(pem: "not a key", algorithm: "ed25519-sha256") }
        #expect(throws: DKIMError.self) { try DKIMSigner.key(pem: "", algorithm: "rsa-sha1") }
    }

    /// The `Date` field is computed by arithmetic, not by a calendar: Python's `email.utils`
    /// reads it back for leap days, the ends of centuries, years and months, the epoch and
    /// instants before it, and a thousand random instants; the day's name is checked against
    /// Python's own.
    @Test func theDateFieldIsTheInstantPythonReadsBack() async throws {
        var instants: [Int] = [
            0, -1, 86_399, 86_400, 951_782_400, 951_868_799, 1_709_164_800, 1_709_251_199, 4_107_542_400, 4_107_456_000,
            1_795_860_000, 253_402_300_799, -2_208_988_800,
        ]
        var random = SystemRandomNumberGenerator()
        instants += (0..<1_000).map { _ in Int.random(in: -2_208_988_800...4_102_444_800, using: &random) }
        let fields = instants.map { seconds in
            let message = MailMessage(
                from: MailAddress(address: "a@example.edu"), to: MailAddress(address: "b@example.edu"), subject: "s", text: "t",
                html: "", messageID: "<x@example.edu>", date: Date(timeIntervalSince1970: Double(seconds) + 0.75))
            return message.headerFields(boundary: "b").first { $0.name == "Date" }?.value ?? ""
        }
        let script = """
            import json, sys, email.utils
            out = []
            for text in json.load(open(sys.argv[1])):
                moment = email.utils.parsedate_to_datetime(text)
                out.append([int(moment.timestamp()), moment.strftime('%a') == text[:3]])
            print(json.dumps(out))
            """
        let input = FileManager.default.temporaryDirectory.appending(path: "dates-\(UUID().uuidString.prefix(8)).json")
        try JSONSerialization.data(withJSONObject: fields).write(to: input)
        defer { try? FileManager.default.removeItem(at: input) }
        let read = try await ChildProcess.run(["/usr/bin/env", "python3", "-c", script, input.path])
        #expect(read.status == 0, "python3: \(read.stderr)")
        let out = try #require(try JSONSerialization.jsonObject(with: Data(read.stdout.utf8)) as? [[Any]])
        #expect(out.count == instants.count)
        for (index, pair) in out.enumerated() where index < instants.count {
            #expect(pair.first as? Int == instants[index] && pair.last as? Bool == true, "\(fields[index])")
        }
        #expect(fields[10] == "Sat, 28 Nov 2026 10:00:00 +0000")
        // Instants no mail is sent at read as the epoch, never a trap (Int.min has no magnitude).
        for far in [-9_223_372_036_854_775_808.0, 1e300, -.infinity, .nan] {
            let message = MailMessage(
                from: MailAddress(address: "a@example.edu"), to: MailAddress(address: "b@example.edu"), subject: "s", text: "t",
                html: "", messageID: "<x@example.edu>", date: Date(timeIntervalSince1970: far))
            #expect(message.headerFields(boundary: "b").first { $0.name == "Date" }?.value == "Thu, 1 Jan 1970 00:00:00 +0000")
        }
    }
}
