import AttestFoundation
import AttestPlugins
import AttestPostgres
import CZlib
import Crypto
import Foundation
import Identity
import Records
import Tenancy
import Testing

/// Cards for tests: the SMART Health Cards specification's example card, and cards of our own
/// signed with the example issuer's published private test keys (`Tests/SmartHealthCards/`,
/// copied from the specification's repository: see its README).
enum Cards {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appending(path: "SmartHealthCards")
    static func file(_ name: String) throws -> Data { try Data(contentsOf: directory.appending(path: name)) }
    static func text(_ name: String) throws -> String {
        String(decoding: try file(name), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static let iss = "https://spec.smarthealth.cards/examples/issuer"
    static let kid = "3Kfdg-XwP-7gXyywtUfUADwBumDOPKMQx-iELL11W9s"

    /// The example issuer as the campus would trust it.
    static func exampleIssuer(revocations: [String: [String: Date?]] = [:]) throws -> TrustedIssuer {
        let jwks = try JSONValue(parsing: Array(try file("example-issuer-jwks.json")))
        return TrustedIssuer(iss: iss, name: "SMART example issuer", keys: try TrustedIssuer.keys(jwks: jwks), revocations: revocations)
    }

    /// The example issuer's private key `kid`.
    static func privateKey(kid: String = kid) throws -> P256.Signing.PrivateKey {
        let jwks = try JSONValue(parsing: Array(try file("example-issuer-jwks.private.json")))
        guard case .array(let keys)? = jwks["keys"] else { throw CardError() }
        for key in keys where key["kid"] == .string(kid) {
            guard case .string(let d)? = key["d"], let raw = Data(base64URLEncoded: d) else { throw CardError() }
            return try P256.Signing.PrivateKey(rawRepresentation: raw)
        }
        throw CardError()
    }

    struct CardError: Error {}

    /// A card's JWS: a health card for `family`, `given`, born `birthDate`, with `doses`
    /// (CVX code, date), signed by the example issuer (or `key`).
    static func jws(
        family: String = "Member", given: [String] = ["Alice"], birthDate: String = "1990-04-02",
        doses: [(String, String)] = [("208", "2021-03-01"), ("208", "2021-03-22")], nbf: Double = 1_700_000_000, rid: String? = nil,
        iss: String = iss, kid: String = kid, key: P256.Signing.PrivateKey? = nil, extra: Int = 0
    ) throws -> String {
        var entries: [JSONValue] = [
            .object([
                "fullUrl": .string("resource:0"),
                "resource": .object([
                    "resourceType": .string("Patient"),
                    "name": .array([.object(["family": .string(family), "given": .array(given.map(JSONValue.string))])]),
                    "birthDate": .string(birthDate),
                ]),
            ])
        ]
        for (index, dose) in doses.enumerated() {
            entries.append(
                .object([
                    "fullUrl": .string("resource:\(index + 1)"),
                    "resource": .object([
                        "resourceType": .string("Immunization"), "status": .string("completed"),
                        "vaccineCode": .object([
                            "coding": .array([.object(["system": .string(SmartHealthCards.cvxSystem), "code": .string(dose.0)])])
                        ]),
                        "patient": .object(["reference": .string("resource:0")]), "occurrenceDateTime": .string(dose.1),
                        "lotNumber": .string(String(repeating: "7", count: extra)),
                    ]),
                ]))
        }
        var vc: [String: JSONValue] = [
            "type": .array([.string("https://smarthealth.cards#health-card"), .string("https://smarthealth.cards#immunization")]),
            "credentialSubject": .object([
                "fhirVersion": .string("4.0.1"),
                "fhirBundle": .object(["resourceType": .string("Bundle"), "type": .string("collection"), "entry": .array(entries)]),
            ]),
        ]
        if let rid { vc["rid"] = .string(rid) }
        let payload = try JSONEncoder().encode(JSONValue.object(["iss": .string(iss), "nbf": .number(nbf), "vc": .object(vc)]))
        return try sign(payload: Array(payload), kid: kid, key: key ?? privateKey())
    }

    static func sign(payload: [UInt8], kid: String = kid, key: P256.Signing.PrivateKey, zip: Bool = true) throws -> String {
        let header = zip ? #"{"zip":"DEF","alg":"ES256","kid":"\#(kid)"}"# : #"{"alg":"ES256","kid":"\#(kid)"}"#
        let input = Base64URL.encode(Data(header.utf8)) + "." + Base64URL.encode(Data(zip ? deflate(payload) : payload))
        let signature = try key.signature(for: Data(input.utf8))
        return input + "." + Base64URL.encode(signature.rawRepresentation)
    }

    /// Raw DEFLATE, as cards are compressed.
    static func deflate(_ input: [UInt8]) -> [UInt8] {
        var stream = z_stream()
        deflateInit2_(&stream, 9, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY, zlibVersion(), Int32(MemoryLayout<z_stream>.size))
        defer { deflateEnd(&stream) }
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, uLong(input.count))))
        var input = input
        input.withUnsafeMutableBufferPointer { source in
            output.withUnsafeMutableBufferPointer { target in
                stream.next_in = source.baseAddress
                stream.avail_in = uInt(source.count)
                stream.next_out = target.baseAddress
                stream.avail_out = uInt(target.count)
                _ = CZlib.deflate(&stream, Z_FINISH)
            }
        }
        return Array(output.prefix(Int(stream.total_out)))
    }

    /// The QR text of a JWS: `shc:/` and two digits a character.
    static func qr(_ jws: String) -> String {
        "shc:/" + digits(jws)
    }

    static func digits(_ jws: String) -> String {
        jws.utf8.map { byte in
            let value = Int(byte) - 45
            return value < 10 ? "0\(value)" : "\(value)"
        }.joined()
    }

    /// The chunks of a card split in `count` QR codes.
    static func chunks(_ jws: String, _ count: Int) -> [String] {
        let all = Array(digits(jws).utf8)
        let size = ((all.count / 2 + count - 1) / count) * 2
        return (0..<count).map { index in
            let part = all[min(index * size, all.count)..<min((index + 1) * size, all.count)]
            return "shc:/\(index + 1)/\(count)/" + String(decoding: part, as: UTF8.self)
        }
    }
}

/// SMART Health Cards read and verified (DESIGN §11): the specification's example card, cards
/// of our own signed with its published test keys, every refusal, and the VCI Directory's
/// signed snapshot.
@Suite("SMART Health Cards")
struct SmartHealthCardTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    func refusal(_ body: () throws -> Void) -> SmartHealthCards.Refusal? {
        do {
            try body()
            return nil
        } catch let refused as SmartHealthCards.Refused {
            return refused.refusal
        } catch { return nil }
    }

    @Test func theSpecificationsExampleCardVerifiesAndGivesItsTwoDoses() throws {
        let jws = try SmartHealthCards.jws(qr: [try Cards.text("example-00.qr.txt")])
        let opened = try SmartHealthCards.open(jws)
        #expect(opened.issuer == Cards.iss && opened.kid == Cards.kid)
        let card = try SmartHealthCards.verify(opened, issuer: try Cards.exampleIssuer(), now: Self.now)
        #expect(
            card.doses == [
                .init(cvx: "207", date: LocalDate(year: 2021, month: 1, day: 1)),
                .init(cvx: "207", date: LocalDate(year: 2021, month: 1, day: 29)),
            ])
        #expect(card.person == .init(family: "Anyperson", given: ["John", "B."], birthDate: "1951-01-20"))
        #expect(card.issuer == Cards.iss)
        #expect(abs(card.notBefore.timeIntervalSince1970 - 1_630_616_666.128) < 0.001)
        // The status those doses give: complete on the second, fully vaccinated 14 days on.
        let vaccination = try #require(HealthStatusComputation.vaccination(card.doses))
        #expect(
            vaccination
                == .init(doses: 2, lastDose: LocalDate(year: 2021, month: 1, day: 29), completed: LocalDate(year: 2021, month: 1, day: 29)))
        let status = HealthStatus(vaccination: vaccination)
        #expect(!status.vaccinated(on: LocalDate(year: 2021, month: 2, day: 11)))
        #expect(status.vaccinated(on: LocalDate(year: 2021, month: 2, day: 12)))
        // Shouted by a QR reader in alphanumeric mode, or with a line break after it: the same card.
        #expect(try SmartHealthCards.jws(qr: ["SHC:/" + (try Cards.text("example-00.qr.txt")).dropFirst(5) + "\r\n"]) == jws)
    }

    @Test func aCardOfOurOwnInChunksInAnyOrderIsTheSameCard() throws {
        let jws = try Cards.jws()
        let chunks = Cards.chunks(jws, 3)
        #expect(try SmartHealthCards.jws(qr: [chunks[2], chunks[0], chunks[1]]) == jws)
        #expect(refusal { _ = try SmartHealthCards.jws(qr: [chunks[0], chunks[1]]) } == .notACard, "a chunk missing")
        #expect(refusal { _ = try SmartHealthCards.jws(qr: [chunks[0], chunks[0], chunks[1]]) } == .notACard, "a chunk twice")
        #expect(refusal { _ = try SmartHealthCards.jws(qr: [Cards.qr(jws), chunks[1]]) } == .notACard, "a whole card among chunks")
        let card = try SmartHealthCards.verify(SmartHealthCards.open(jws), issuer: try Cards.exampleIssuer(), now: Self.now)
        #expect(card.doses.count == 2 && card.person?.family == "Member")
    }

    @Test func everyRefusalIsNamed() throws {
        let issuer = try Cards.exampleIssuer()
        func verify(_ jws: String, issuer: TrustedIssuer = issuer) throws {
            _ = try SmartHealthCards.verify(SmartHealthCards.open(jws), issuer: issuer, now: Self.now)
        }
        // Not a card at all.
        for text in ["", "hello", "shc:/", "shc:/123", "shc:/7878", "shc:/56abc2", "shc:/0/2/5676", "shc:/3/2/5676", "shc:/1/11/56"] {
            #expect(refusal { _ = try SmartHealthCards.jws(qr: [text]) } == .notACard, "\(text)")
        }
        #expect(refusal { try verify("a.b") } == .notACard)
        #expect(refusal { _ = try SmartHealthCards.jws(file: Array(#"{"verifiableCredential": "x"}"#.utf8)) } == .notACard)
        // A payload that inflates past the limit: no decompression bomb.
        let bomb = try Cards.sign(payload: Array(repeating: UInt8(ascii: " "), count: 1 << 20), key: Cards.privateKey())
        #expect(refusal { try verify(bomb) } == .notACard)
        // Changed after signing: the payload of one card with another's signature.
        let mine = try Cards.jws(), other = try Cards.jws(family: "Other")
        let swapped = mine.split(separator: ".")[0] + "." + other.split(separator: ".")[1] + "." + mine.split(separator: ".")[2]
        #expect(refusal { try verify(String(swapped)) } == .badSignature)
        // Signed by a key the issuer does not have, under its kid.
        #expect(refusal { try verify(try Cards.jws(key: P256.Signing.PrivateKey())) } == .badSignature)
        // Another of the issuer's keys that the campus was not given.
        let second = "7rIUtD5K5Izrptr3ywgESTxhgJtJSeb06V42hg7WUDs"
        let onlyFirst = TrustedIssuer(iss: Cards.iss, name: "x", keys: issuer.keys.filter { $0.key == Cards.kid })
        #expect(refusal { try verify(try Cards.jws(kid: second, key: Cards.privateKey(kid: second)), issuer: onlyFirst) } == .badSignature)
        // Not yet valid.
        #expect(refusal { try verify(try Cards.jws(nbf: Self.now.timeIntervalSince1970 + 3_600)) } == .notYetValid)
        #expect(refusal { try verify(try Cards.jws(nbf: Self.now.timeIntervalSince1970 + 30)) } == nil, "a minute's skew")
        #expect(refusal { try verify(try Cards.jws(nbf: 1e300)) } == .notYetValid)
        // Revoked: by rid, or by rid before a time.
        let revoked = try Cards.exampleIssuer(revocations: [Cards.kid: ["r1": nil, "r2": Date(timeIntervalSince1970: 1_750_000_000)]])
        #expect(refusal { try verify(try Cards.jws(rid: "r1"), issuer: revoked) } == .revoked)
        #expect(refusal { try verify(try Cards.jws(nbf: 1_700_000_000, rid: "r2"), issuer: revoked) } == .revoked)
        #expect(refusal { try verify(try Cards.jws(nbf: 1_760_000_000, rid: "r2"), issuer: revoked) } == nil, "issued after the cut-off")
        #expect(refusal { try verify(try Cards.jws(rid: "r3"), issuer: revoked) } == nil)
        // A card with no COVID-19 dose (an influenza vaccine only).
        #expect(refusal { try verify(try Cards.jws(doses: [("150", "2021-10-01")])) } == .noVaccination)
        // The revocation lists as issuers publish them.
        let lists = TrustedIssuer.revocations(crls: [
            try JSONValue(parsing: Array(#"{"kid": "k", "method": "rid", "ctr": 2, "rids": ["a", "b.1750000000", ""]}"#.utf8))
        ])
        let none: Date? = nil
        #expect(lists == ["k": ["a": none, "b": Date(timeIntervalSince1970: 1_750_000_000)]])
    }

    @Test func thePersonIsComparedAsTheCampusChose() throws {
        let card = try SmartHealthCards.verify(
            SmartHealthCards.open(try Cards.jws(family: "Núñez-García", given: ["María", "José"], birthDate: "1990-04-02")),
            issuer: try Cards.exampleIssuer(), now: Self.now)
        let born = LocalDate(year: 1990, month: 4, day: 2), other = LocalDate(year: 1990, month: 4, day: 3)
        func check(_ name: String, _ birthDate: LocalDate?, _ identity: SmartHealthCards.IdentityCheck) -> SmartHealthCards.Refusal? {
            refusal { try SmartHealthCards.check(card, member: name, birthDate: birthDate, identity: identity) }
        }
        #expect(check("Someone Else", other, .off) == nil)
        #expect(check("Maria Nunez Garcia", born, .lenient) == nil, "accents and case folded")
        #expect(check("M. Nunez Garcia", nil, .lenient) == nil, "lenient: no birth date known, the family name suffices")
        #expect(check("Maria Nunez", born, .lenient) == .anotherPerson, "half the family name")
        #expect(check("Maria Nunez Garcia", other, .lenient) == .anotherPerson)
        #expect(check("maría josé núñez garcía", born, .strict) == nil)
        #expect(check("Maria Nunez Garcia", born, .strict) == .anotherPerson, "a given name missing")
        #expect(check("María José Núñez García", nil, .strict) == .anotherPerson, "strict needs the birth date")
    }

    @Test func theDirectorysSnapshotVerifiesWithItsCertificateAndNothingElseDoes() throws {
        let snapshot = try Cards.file("vci_snapshot.json"), signature = try Cards.file("vci_snapshot.sig")
        let certificate = try Cards.file("vci_snapshot.crt")
        try SHCDirectory.verify(snapshot: snapshot, signature: signature, certificate: certificate, now: Self.now)
        var changed = snapshot
        changed[changed.count / 2] ^= 1
        #expect(throws: SHCDirectory.Invalid.self) {
            try SHCDirectory.verify(snapshot: changed, signature: signature, certificate: certificate, now: Self.now)
        }
        #expect(throws: SHCDirectory.Invalid.self, "the certificate expired in 2032") {
            try SHCDirectory.verify(
                snapshot: snapshot, signature: signature, certificate: certificate, now: Date(timeIntervalSince1970: 2_000_000_000))
        }
        #expect(throws: SHCDirectory.Invalid.self) {
            try SHCDirectory.verify(snapshot: snapshot, signature: signature, certificate: Data("not a certificate".utf8), now: Self.now)
        }
        let entries = try SHCDirectory.entries(snapshot: snapshot)
        // All but one (which publishes no key); two with a coordinate short of its leading zero byte.
        #expect(entries.count == 650)
        #expect(entries.contains { $0.iss == "https://soap.bassett.org/FHIR/api/epic/2021/Security/Open/EcKeys/32001/SHC" })
        let california = try #require(entries.first { $0.iss == "https://myvaccinerecord.cdph.ca.gov/creds" })
        #expect(california.name == "State of California" && california.keyCount == 4)
        #expect(entries.filter { $0.canonical != nil }.count == 6)
        #expect(entries.filter { !$0.crls.isEmpty }.count == 3)
    }
}
