import AttestFoundation
import Crypto
import Foundation
import _CryptoExtras

/// DKIM signatures (RFC 6376) with relaxed/relaxed canonicalization: `ed25519-sha256` (RFC 8463)
/// or `rsa-sha256`, over the headers a receiver checks (`h=`), and the body hash (`bh=`).
public struct DKIMSigner: Sendable {
    public enum Key: Sendable {
        case ed25519(Curve25519.Signing.PrivateKey)
        case rsa(_RSA.Signing.PrivateKey)

        var algorithm: String {
            switch self {
            case .ed25519: "ed25519-sha256"
            case .rsa: "rsa-sha256"
            }
        }
    }

    public let domain: String
    public let selector: String
    public let key: Key

    public init(domain: String, selector: String, key: Key) {
        (self.domain, self.selector, self.key) = (domain, selector, key)
    }

    /// A key from a PEM file's text: PKCS#8 Ed25519 (`openssl genpkey -algorithm ed25519`) for
    /// `ed25519-sha256`, PKCS#1 or PKCS#8 RSA of at least 2048 bits for `rsa-sha256`.
    public static func key(pem: String, algorithm: String) throws -> Key {
        switch algorithm {
        case "ed25519-sha256":
            guard let key = try? Curve25519.Signing.PrivateKey(pemRepresentation: pem) else {
                throw DKIMError("the DKIM key is not an Ed25519 private key in PEM (make one with `openssl genpkey -algorithm ed25519`)")
            }
            return .ed25519(key)
        case "rsa-sha256":
            guard let key = try? _RSA.Signing.PrivateKey(pemRepresentation: pem) else {
                throw DKIMError("the DKIM key is not an RSA private key in PEM of 2048 bits or more (make one with `openssl genrsa 2048`)")
            }
            return .rsa(key)
        default:
            throw DKIMError("the DKIM algorithm must be ed25519-sha256 or rsa-sha256, got \"\(algorithm.prefix(40))\"")
        }
    }

    /// The header names signed, lower case, those of the message that are present.
    static let signed = [
        "from", "to", "reply-to", "subject", "date", "message-id", "mime-version", "content-type", "list-unsubscribe",
        "list-unsubscribe-post",
    ]

    /// The `DKIM-Signature` field's value for `headers` (unfolded) and `body` (CRLF lines).
    public func signature(headers: [(name: String, value: String)], body: String, now: Date) throws -> String {
        let bodyHash = Data(SHA256.hash(data: Self.relaxedBody(body))).base64EncodedString()
        let names = headers.map { $0.name.lowercased() }
        let present = Self.signed.filter { names.contains($0) }
        let timestamp = Int(exactly: now.timeIntervalSince1970.rounded(.down)) ?? 0
        let unsigned =
            "v=1; a=\(key.algorithm); c=relaxed/relaxed; d=\(domain); s=\(selector); t=\(timestamp); h=\(present.joined(separator: ":")); bh=\(bodyHash); b="
        // Each signed header as the relaxed rule writes it, then this field without its CRLF.
        var input: [UInt8] = []
        input.reserveCapacity(1_024)
        for name in present {
            // The last occurrence of a name is signed first (RFC 6376 §5.4.2); each appears once here.
            guard let index = names.lastIndex(of: name) else { continue }
            Self.appendRelaxedHeader(name, headers[index].value, to: &input)
            input += [0x0D, 0x0A]
        }
        Self.appendRelaxedHeader("dkim-signature", unsigned, to: &input)
        let signature: Data
        switch key {
        case .ed25519(let key): signature = try key.signature(for: Data(SHA256.hash(data: input)))
        case .rsa(let key): signature = try key.signature(for: Data(input), padding: .insecurePKCS1v1_5).rawRepresentation
        }
        return unsigned + signature.base64EncodedString()
    }

    /// The DNS TXT record receivers read: `v=DKIM1; k=ed25519; p=…` at `<selector>._domainkey.<domain>`.
    public var dnsRecord: String {
        switch key {
        case .ed25519(let key): "v=DKIM1; k=ed25519; p=" + key.publicKey.rawRepresentation.base64EncodedString()
        case .rsa(let key): "v=DKIM1; k=rsa; p=" + key.publicKey.derRepresentation.base64EncodedString()
        }
    }

    /// Relaxed header canonicalization: the name in lower case, the value unfolded, runs of
    /// spaces and tabs one space, none at either end.
    static func relaxedHeader(_ name: String, _ value: String) -> String {
        var bytes: [UInt8] = []
        appendRelaxedHeader(name, value, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `relaxedHeader` on the UTF-8 bytes, appended to `out`: a message's fields are
    /// canonicalized and hashed for every message sent, and through Foundation's strings this
    /// was a fifth of the server's work a reminder.
    static func appendRelaxedHeader(_ name: String, _ value: String, to out: inout [UInt8]) {
        func blank(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }
        for byte in name.utf8 where !blank(byte) {
            out.append(byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte)  // ASCII lower case; a name is ASCII
        }
        out.append(UInt8(ascii: ":"))
        var pending = false, started = false
        var bytes = value.utf8.makeIterator()
        var next = bytes.next()
        while let byte = next {
            next = bytes.next()
            // Unfolding: a CRLF goes, whatever follows it.
            if byte == 0x0D, next == 0x0A {
                next = bytes.next()
                continue
            }
            if blank(byte) {
                pending = started
                continue
            }
            if pending { out.append(0x20) }
            pending = false
            started = true
            out.append(byte)
        }
    }

    /// Relaxed body canonicalization: in each line runs of spaces and tabs one space and none
    /// at its end, empty lines at the end removed, CRLF after the last line (an empty body stays
    /// empty). Lines end at CRLF; a lone CR or LF is the line's own byte.
    static func relaxedBody(_ body: String) -> [UInt8] {
        let bytes = Array(body.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + 2)
        var kept = 0  // out's length up to the last line that was not empty
        var index = 0, blank = false
        while index < bytes.count {
            let byte = bytes[index]
            if byte == 0x0D, index + 1 < bytes.count, bytes[index + 1] == 0x0A {
                blank = false  // blanks before the line's end go
                let empty = out.isEmpty || (out.count >= 2 && out[out.count - 2] == 0x0D && out[out.count - 1] == 0x0A)
                out += [0x0D, 0x0A]
                if !empty { kept = out.count }
                index += 2
                continue
            }
            if byte == 0x20 || byte == 0x09 {
                blank = true
            } else {
                if blank { out.append(0x20) }
                blank = false
                out.append(byte)
            }
            index += 1
        }
        // A last line without CRLF: kept (its trailing blanks dropped) and ended.
        if !(out.isEmpty || (out.count >= 2 && out[out.count - 2] == 0x0D && out[out.count - 1] == 0x0A)) {
            out += [0x0D, 0x0A]
            kept = out.count
        }
        return Array(out[..<kept])
    }

}

public struct DKIMError: Error, CustomStringConvertible, Sendable {
    public let description: String
    init(_ description: String) { self.description = description }
}

extension MailMessage {
    /// The message with a `DKIM-Signature` field first, when `signer` is given.
    public func signed(by signer: DKIMSigner?, boundary: String, now: Date) throws -> String {
        guard let signer else { return rendered(boundary: boundary) }
        let fields = headerFields(boundary: boundary), body = body(boundary: boundary)
        let signature = try signer.signature(headers: fields, body: body, now: now)
        return Self.fold("DKIM-Signature", signature) + fields.map { Self.fold($0.name, $0.value) }.joined() + "\r\n" + body
    }
}
