import AttestFoundation
import AttestPlugins
import CZlib
import Crypto
import Foundation

/// SMART Health Cards (spec.smarthealth.cards): a card's text as a QR code holds it
/// (`shc:/` and digits, or chunks `shc:/1/2/…`) or a `.smart-health-card` file's JSON, opened
/// to its JWS, and the JWS verified against a trusted issuer's key. Everything here is pure
/// and bounded: no network, no database; `Vaccinations` finds the issuer and keeps the doses.
public enum SmartHealthCards {
    /// Why a card is refused, each a problem type of its own (`…/problems/shc-<kind>`).
    public enum Refusal: String, Sendable, Equatable, CaseIterable {
        case notACard = "not-a-card"
        case unknownIssuer = "unknown-issuer"
        case badSignature = "bad-signature"
        case notYetValid = "not-yet-valid"
        case revoked
        case anotherPerson = "another-person"
        case noVaccination = "no-vaccination"
    }

    public struct Refused: Error, Sendable, Equatable, CustomStringConvertible {
        public var refusal: Refusal
        /// What is wrong and how to mend it, for the member.
        public var detail: String

        public init(_ refusal: Refusal, _ detail: String) { (self.refusal, self.detail) = (refusal, detail) }
        public var description: String { "\(refusal.rawValue): \(detail)" }
    }

    /// A JWS longer than this is no card (a QR code holds at most 1,195 characters of one; a
    /// file's cards are each of that order).
    public static let maxJWS = 16_384
    /// At most this many chunks (the specification's chunked cards were up to 3 or 4).
    public static let maxChunks = 10
    /// At most this many cards in one file.
    public static let maxCards = 10
    /// A payload inflating past this is refused: no decompression bomb.
    public static let maxPayload = 65_536

    // MARK: Presentation

    /// The JWS of a card presented as QR text: one `shc:/…`, or every chunk `shc:/N/M/…` of
    /// one card in any order.
    public static func jws(qr texts: [String]) throws(Refused) -> String {
        guard let first = texts.first else { throw Refused(.notACard, "no QR text was given: paste the text that starts with shc:/") }
        if texts.count == 1, let whole = try numeric(first), whole.chunk == nil { return try decodeDigits(whole.digits) }
        guard texts.count <= maxChunks else {
            throw Refused(.notACard, "a card has at most \(maxChunks) chunks; \(texts.count) were given")
        }
        var parts = [Substring?](repeating: nil, count: texts.count)
        for text in texts {
            guard let part = try numeric(text), let chunk = part.chunk else {
                throw Refused(.notACard, "a card in \(texts.count) chunks has texts that start shc:/N/\(texts.count)/")
            }
            guard chunk.total == texts.count else {
                throw Refused(
                    .notACard, "chunk \(chunk.index) says the card has \(chunk.total) chunks but \(texts.count) were given: give them all")
            }
            guard parts[chunk.index - 1] == nil else { throw Refused(.notACard, "chunk \(chunk.index) was given twice") }
            parts[chunk.index - 1] = part.digits
        }
        return try decodeDigits(parts.map { $0 ?? "" }.joined()[...])
    }

    /// A QR text's digits and, for a chunk, its place: `shc:/N/M/digits` or `shc:/digits`.
    static func numeric(_ text: String) throws(Refused) -> (chunk: (index: Int, total: Int)?, digits: Substring)? {
        // ASCII white space trimmed byte by byte (a pasted "\r\n" too); Foundation's trimming
        // costs more than the rest of reading a card.
        let bytes = text.utf8
        let isSpace = { (byte: UInt8) in byte == 0x20 || (0x09...0x0D).contains(byte) }
        let start = bytes.firstIndex { !isSpace($0) } ?? bytes.endIndex
        let end = bytes.lastIndex { !isSpace($0) }.map { bytes.index(after: $0) } ?? start
        let trimmed = bytes[start..<max(start, end)]
        guard trimmed.count > 5, trimmed.prefix(5).map({ $0 | 0x20 }) == Array("shc:/".utf8) else {
            throw Refused(.notACard, "this is not a SMART Health Card's QR text: it should start with shc:/")
        }
        let rest = trimmed.dropFirst(5)
        let fields = rest.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        switch fields.count {
        case 1: return (nil, Substring(rest))
        case 3:
            guard let index = Int(Substring(fields[0])), let total = Int(Substring(fields[1])), total >= 2, total <= maxChunks,
                (1...total).contains(index)
            else { throw Refused(.notACard, "a chunk's text starts shc:/N/M/ with N from 1 to M and M from 2 to \(maxChunks)") }
            return ((index, total), Substring(fields[2]))
        default: throw Refused(.notACard, "a card's QR text is shc:/ then digits, or shc:/N/M/ then digits for chunk N of M")
        }
    }

    /// Numeric mode: each two digits are one character, its code less 45.
    static func decodeDigits(_ digits: Substring) throws(Refused) -> String {
        let bytes = Array(digits.utf8)
        guard !bytes.isEmpty, bytes.count % 2 == 0, bytes.count <= maxJWS * 2 else {
            throw Refused(.notACard, "a card's QR text has an even number of digits after shc:/ (and not too many)")
        }
        var text = [UInt8]()
        text.reserveCapacity(bytes.count / 2)
        var index = 0
        while index < bytes.count {
            let high = bytes[index] &- UInt8(ascii: "0"), low = bytes[index + 1] &- UInt8(ascii: "0")
            guard high < 10, low < 10, high * 10 + low <= 77 else {
                throw Refused(.notACard, "a card's QR text has only digit pairs from 00 to 77 after shc:/")
            }
            text.append(high * 10 + low + 45)
            index += 2
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The cards of a `.smart-health-card` file: `{"verifiableCredential": ["JWS", …]}`.
    public static func jws(file bytes: some Collection<UInt8>) throws(Refused) -> [String] {
        guard let json = try? JSONValue(parsing: bytes), let credentials = json["verifiableCredential"] else {
            throw Refused(.notACard, "a .smart-health-card file is JSON with verifiableCredential, a list of the cards")
        }
        return try jws(credentials: credentials)
    }

    /// The cards of a file's `verifiableCredential`: a list of JWS.
    public static func jws(credentials: JSONValue) throws(Refused) -> [String] {
        guard case .array(let cards) = credentials else {
            throw Refused(.notACard, "verifiableCredential is a list of the cards' JWS")
        }
        guard !cards.isEmpty, cards.count <= maxCards else {
            throw Refused(.notACard, "a .smart-health-card file holds 1 to \(maxCards) cards; this one holds \(cards.count)")
        }
        return try cards.map { card throws(Refused) in
            guard case .string(let jws) = card else { throw Refused(.notACard, "each of verifiableCredential is a card's JWS, a string") }
            return jws
        }
    }

    // MARK: The JWS

    /// A card's JWS opened but not yet verified: its issuer is only a claim until `verify`.
    public struct Opened: Sendable {
        public var kid: String
        /// The `iss` the payload claims.
        public var issuer: String
        let payload: JSONValue
        let signingInput: [UInt8]
        let signature: [UInt8]
    }

    /// Splits, decodes and inflates a compact JWS (`{"zip":"DEF","alg":"ES256","kid":…}`).
    public static func open(_ jws: String) throws(Refused) -> Opened {
        let bytes = Array(jws.utf8)
        guard bytes.count <= maxJWS else { throw Refused(.notACard, "a card is at most \(maxJWS) characters; this is \(bytes.count)") }
        let parts = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3, let header = Base64URL.decodeBytes(parts[0]), let compressed = Base64URL.decodeBytes(parts[1]),
            let signature = Base64URL.decodeBytes(parts[2]), let headerJSON = try? JSONValue(parsing: header)
        else { throw Refused(.notACard, "a card is a JWS: three base64url parts joined by dots") }
        guard case .string("ES256")? = headerJSON["alg"] else {
            throw Refused(.badSignature, "a card is signed with ES256; this one's header names another algorithm")
        }
        guard case .string(let kid)? = headerJSON["kid"], !kid.isEmpty else { throw Refused(.notACard, "the card's header has no kid") }
        let payloadBytes: [UInt8]
        switch headerJSON["zip"] {
        case .string("DEF")?: payloadBytes = try inflate(compressed)
        case nil: payloadBytes = compressed
        default: throw Refused(.notACard, "a card's payload is compressed with DEF (raw DEFLATE) or not at all")
        }
        guard let payload = try? JSONValue(parsing: payloadBytes), case .string(let issuer)? = payload["iss"], !issuer.isEmpty else {
            throw Refused(.notACard, "the card's payload is not JSON with its issuer, iss")
        }
        let signingInput = Array(bytes[..<(parts[0].count + 1 + parts[1].count)])
        return Opened(kid: kid, issuer: issuer, payload: payload, signingInput: signingInput, signature: signature)
    }

    /// Raw DEFLATE (RFC 1951) inflated with zlib, refused past `maxPayload`.
    static func inflate(_ input: [UInt8]) throws(Refused) -> [UInt8] {
        var stream = z_stream()
        guard inflateInit2_(&stream, -15, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw Refused(.notACard, "the card's payload could not be inflated")
        }
        defer { inflateEnd(&stream) }
        var output = [UInt8](repeating: 0, count: maxPayload + 1)
        var input = input
        let status = input.withUnsafeMutableBufferPointer { source in
            output.withUnsafeMutableBufferPointer { target in
                stream.next_in = source.baseAddress
                stream.avail_in = uInt(source.count)
                stream.next_out = target.baseAddress
                stream.avail_out = uInt(target.count)
                return CZlib.inflate(&stream, Z_FINISH)
            }
        }
        guard status == Z_STREAM_END else {
            throw Refused(
                .notACard,
                stream.total_out > UInt(maxPayload)
                    ? "the card's payload inflates past \(maxPayload) bytes" : "the card's payload is not raw DEFLATE data")
        }
        output.removeLast(output.count - Int(stream.total_out))
        return output
    }

    // MARK: Verification

    /// A person's name and birth date as a card or a campus knows them.
    public struct Person: Sendable, Equatable {
        public var family: String
        public var given: [String]
        /// `YYYY-MM-DD` (a card may give only `YYYY` or `YYYY-MM`).
        public var birthDate: String?

        public init(family: String, given: [String], birthDate: String?) {
            (self.family, self.given, self.birthDate) = (family, given, birthDate)
        }
    }

    /// A COVID-19 vaccine dose: its CVX code and the day it was given.
    public struct Dose: Sendable, Equatable, Hashable, Codable {
        public var cvx: String
        public var date: LocalDate

        public init(cvx: String, date: LocalDate) { (self.cvx, self.date) = (cvx, date) }
    }

    /// What a verified card says.
    public struct Card: Sendable, Equatable {
        /// The issuer as the campus trusts it: its `canonical_iss` when the directory gives one.
        public var issuer: String
        public var notBefore: Date
        public var person: Person?
        /// Its COVID-19 doses, by date; other immunizations are not kept.
        public var doses: [Dose]
    }

    /// Checks `opened`'s signature with `issuer`'s key `kid`, then its `nbf` against `now`
    /// (a minute's clock skew allowed), its `rid` against the issuer's revocations, and reads
    /// the patient and the COVID-19 doses of its FHIR bundle.
    public static func verify(_ opened: Opened, issuer: TrustedIssuer, now: Date) throws(Refused) -> Card {
        guard let key = issuer.keys[opened.kid] else {
            throw Refused(.badSignature, "the card's key \(opened.kid) is not one of \(issuer.name)'s keys")
        }
        guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: opened.signature),
            key.isValidSignature(signature, for: opened.signingInput)
        else { throw Refused(.badSignature, "the card's signature does not verify with \(issuer.name)'s key: it was changed") }
        let payload = opened.payload
        guard case .number(let nbf)? = payload["nbf"], nbf.isFinite else { throw Refused(.notACard, "the card has no nbf, its date") }
        let notBefore = Date(timeIntervalSince1970: nbf)
        guard notBefore <= now.addingTimeInterval(60) else {
            // A date past 2100 is not worth formatting (nor safe to, at 1e300 seconds).
            let from = nbf < 4_102_444_800 ? notBefore.formatted(.iso8601) : "a date past 2100"
            throw Refused(.notYetValid, "the card is valid only from \(from): present it then")
        }
        let vc = payload["vc"]
        if case .string(let rid)? = vc?["rid"], let revoked = issuer.revocations[opened.kid]?[rid] {
            if revoked.map({ notBefore < $0 }) ?? true {
                throw Refused(.revoked, "\(issuer.name) revoked this card: ask them for a new one")
            }
        }
        guard case .array(let types)? = vc?["type"], types.contains(.string("https://smarthealth.cards#health-card")),
            case .array(let entries)? = vc?["credentialSubject"]?["fhirBundle"]?["entry"]
        else { throw Refused(.notACard, "the card's payload is not a health card with a FHIR bundle") }
        var person: Person?
        var doses = Set<Dose>()
        for entry in entries {
            let resource = entry["resource"]
            switch resource?["resourceType"] {
            case .string("Patient")?:
                guard person == nil, case .array(let names)? = resource?["name"], let name = names.first else { continue }
                var given: [String] = []
                if case .array(let words)? = name["given"] {
                    given = words.compactMap { if case .string(let word) = $0 { word } else { nil } }
                }
                var family = ""
                if case .string(let text)? = name["family"] { family = text }
                var birthDate: String?
                if case .string(let text)? = resource?["birthDate"] { birthDate = text }
                person = Person(family: family, given: given, birthDate: birthDate)
            case .string("Immunization")?:
                guard case .string("completed")? = resource?["status"], case .array(let codings)? = resource?["vaccineCode"]?["coding"],
                    case .string(let occurrence)? = resource?["occurrenceDateTime"],
                    let date = LocalDate(String(occurrence.prefix(10)))
                else { continue }
                for coding in codings {
                    if case .string(Self.cvxSystem)? = coding["system"], case .string(let code)? = coding["code"],
                        Self.covidVaccines.contains(code)
                    {
                        doses.insert(Dose(cvx: code, date: date))
                    }
                }
            default: continue
            }
        }
        guard !doses.isEmpty else {
            throw Refused(.noVaccination, "the card holds no COVID-19 vaccination: present the card of your vaccination")
        }
        return Card(
            issuer: issuer.canonical ?? issuer.iss, notBefore: notBefore, person: person,
            doses: doses.sorted { ($0.date, $0.cvx) < ($1.date, $1.cvx) })
    }

    public static let cvxSystem = "http://hl7.org/fhir/sid/cvx"

    /// The CVX codes of COVID-19 vaccines kept (CDC's CVX table): the United States' products
    /// and the World Health Organization's listed ones given abroad (500–511).
    public static let covidVaccines: Set<String> = [
        "207", "208", "210", "211", "212", "213", "217", "218", "219", "221", "225", "226", "227", "228", "229", "230", "300", "301",
        "302", "308", "309", "310", "311", "312", "313", "500", "501", "502", "503", "504", "505", "506", "507", "508", "509", "510",
        "511",
    ]
    /// Of those, the ones complete in one dose (Janssen, Sputnik Light, CanSino).
    public static let singleDose: Set<String> = ["212", "504", "506"]

    // MARK: Identity

    /// How a card's person is compared with the member (campus setting `shc-identity`).
    public enum IdentityCheck: String, Sendable, CaseIterable {
        /// Not compared.
        case off
        /// The family name among the member's names, and the birth date when the campus knows
        /// the member's (the default).
        case lenient
        /// Every given name and the family name are the member's names, and the birth date.
        case strict
    }

    /// Refuses a card whose person is not the member `name`, born `birthDate` (nil: the campus
    /// does not know it, and a check that needs it refuses).
    public static func check(_ card: Card, member name: String, birthDate: LocalDate?, identity: IdentityCheck) throws(Refused) {
        guard identity != .off else { return }
        guard let person = card.person else { throw Refused(.anotherPerson, "the card names nobody, so it cannot be yours") }
        let memberWords = Set(words(name))
        let familyWords = words(person.family)
        guard !familyWords.isEmpty, familyWords.allSatisfy(memberWords.contains) else {
            throw Refused(.anotherPerson, "the card is for another person: its family name is not yours (\(name))")
        }
        if identity == .strict {
            let cardWords = Set(familyWords + person.given.flatMap(words))
            guard cardWords == memberWords else {
                throw Refused(.anotherPerson, "the card is for another person: its name is not exactly yours (\(name))")
            }
        }
        guard let birthDate else {
            if identity == .lenient { return }
            throw Refused(
                .anotherPerson,
                "the campus does not know your birth date to compare with the card's: ask the health office to record it")
        }
        guard person.birthDate == birthDate.description else {
            throw Refused(.anotherPerson, "the card is for another person: its birth date is not yours")
        }
    }

    /// A name's words, case and accents folded, punctuation dropped ("O'Brien-Núñez" → obrien, nunez).
    static func words(_ name: String) -> [String] {
        // Split on scalars, not Characters: a space followed by a combining mark is one Character.
        name.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil).lowercased().unicodeScalars
            .split { $0 == " " || $0 == "-" || $0 == "\t" }
            .map { String(String.UnicodeScalarView($0.filter { CharacterSet.alphanumerics.contains($0) })) }
            .filter { !$0.isEmpty }
    }
}

/// An issuer whose cards the campus trusts: from the VCI Directory or added by hand.
public struct TrustedIssuer: Sendable {
    public var iss: String
    /// The directory's `canonical_iss`: the issuer this `iss` is another address of.
    public var canonical: String?
    public var name: String
    public var keys: [String: P256.Signing.PublicKey]
    /// Per key id, the revoked `rid`s, each with the time before which its cards are revoked
    /// (nil: all of them).
    public var revocations: [String: [String: Date?]]

    public init(
        iss: String, canonical: String? = nil, name: String, keys: [String: P256.Signing.PublicKey],
        revocations: [String: [String: Date?]] = [:]
    ) {
        (self.iss, self.canonical, self.name, self.keys, self.revocations) = (iss, canonical, name, keys, revocations)
    }

    /// The ES256 keys of a JWKS (`{"keys": [{"kty":"EC","crv":"P-256","kid","x","y"}…]}`); other
    /// keys are skipped. Throws when it holds none.
    public static func keys(jwks: JSONValue) throws(SmartHealthCards.Refused) -> [String: P256.Signing.PublicKey] {
        guard case .array(let entries)? = jwks["keys"] else {
            throw .init(.unknownIssuer, "a JWKS is JSON with keys, a list of JSON Web Keys")
        }
        var keys: [String: P256.Signing.PublicKey] = [:]
        for entry in entries {
            guard case .string("EC")? = entry["kty"], case .string("P-256")? = entry["crv"], case .string(let kid)? = entry["kid"],
                case .string(let x)? = entry["x"], case .string(let y)? = entry["y"],
                let xBytes = Data(base64URLEncoded: x), let yBytes = Data(base64URLEncoded: y), xBytes.count <= 32, yBytes.count <= 32,
                // Some issuers' keys drop a coordinate's leading zero byte (two in the VCI
                // Directory): padded back, as the coordinate's value is the same.
                let key = try? P256.Signing.PublicKey(rawRepresentation: padded(xBytes) + padded(yBytes))
            else { continue }
            keys[kid] = key
        }
        guard !keys.isEmpty else { throw .init(.unknownIssuer, "the JWKS holds no ES256 key (kty EC, crv P-256, kid, x, y)") }
        return keys
    }

    /// A JWKS's keys without their private parameters (RFC 7518 §6.2.2, §6.3.2 and §6.4: `d`,
    /// `p`, `q`, `dp`, `dq`, `qi`, `oth`, `k`), and whether any key had one: a verifier keeps
    /// public keys only, even when handed an issuer's private JWKS.
    public static func publicKeys(of jwks: JSONValue) -> (keys: JSONValue, hadPrivate: Bool) {
        guard case .array(let entries)? = jwks["keys"] else { return (.array([]), false) }
        var hadPrivate = false
        let kept = entries.map { entry -> JSONValue in
            guard case .object(var members) = entry else { return entry }
            for name in ["d", "p", "q", "dp", "dq", "qi", "oth", "k"] where members[name] != nil {
                members[name] = nil
                hadPrivate = true
            }
            return .object(members)
        }
        return (.array(kept), hadPrivate)
    }

    /// A coordinate as its 32 bytes, big-endian.
    static func padded(_ coordinate: Data) -> Data { Data(count: 32 - coordinate.count) + coordinate }

    /// The revocations of the issuer's lists (`{"kid", "method": "rid", "rids": ["rid" or
    /// "rid.timestamp"…]}`), by key id.
    public static func revocations(crls: [JSONValue]) -> [String: [String: Date?]] {
        var revocations: [String: [String: Date?]] = [:]
        for crl in crls {
            guard case .string(let kid)? = crl["kid"], case .array(let rids)? = crl["rids"] else { continue }
            for case .string(let entry) in rids {
                let parts = entry.split(separator: ".", maxSplits: 1)
                guard let rid = parts.first.map(String.init), !rid.isEmpty else { continue }
                let before = parts.count == 2 ? Double(parts[1]).map { Date(timeIntervalSince1970: $0) } : nil
                revocations[kid, default: [:]][rid] = .some(before)
            }
        }
        return revocations
    }
}
