import AttestFoundation
import AttestPluginHTTP
import AttestPlugins
import AttestPostgres
import AttestTestSupport
import BuiltinPlugins
import Crypto
import Foundation
import JWTKit
import Logging
import Testing

@testable import Identity
@testable import Records
@testable import Surveys
@testable import Tenancy

/// DESIGN §9, crash-proof: every parser that reads outside data, fed thousands of generated
/// inputs (random bytes and mutations of valid ones, `Fuzz`). A trap ends the test process,
/// so surviving is the first property; each test also checks that what is accepted is what
/// the parser promises, and that what is refused is refused with the parser's own error.
@Suite("Parsers under fuzzing")
struct ParserFuzzTests {
    // MARK: JSON

    /// Writes a parsed value back as JSON text, so an accepted input can be read twice.
    static func text(of value: JSONValue) -> String {
        switch value {
        case .null: return "null"
        case .bool(let flag): return flag ? "true" : "false"
        case .number(let number):
            var output = ""
            JSONText.appendNumber(number, to: &output)
            return output
        case .string(let string):
            var output = ""
            JSONText.appendString(string, to: &output)
            return output
        case .array(let items): return "[" + items.map(text(of:)).joined(separator: ",") + "]"
        case .object(let members):
            return "{"
                + members.sorted { $0.key < $1.key }.map { key, value in
                    var output = ""
                    JSONText.appendString(key, to: &output)
                    return output + ":" + text(of: value)
                }.joined(separator: ",") + "}"
        }
    }

    /// The same text as `text(of:)`, written by `JSONBytes` (the hot responses' writer).
    static func bytes(of value: JSONValue, to json: inout JSONBytes) {
        switch value {
        case .null: json.literal("null")
        case .bool(let flag): json.bool(flag)
        case .number(let number): json.number(number)
        case .string(let string): json.string(string)
        case .array(let items):
            json.literal("[")
            for (index, item) in items.enumerated() {
                if index > 0 { json.literal(",") }
                bytes(of: item, to: &json)
            }
            json.literal("]")
        case .object(let members):
            json.literal("{")
            for (index, member) in members.sorted(by: { $0.key < $1.key }).enumerated() {
                if index > 0 { json.literal(",") }
                json.string(member.key)
                json.literal(":")
                bytes(of: member.value, to: &json)
            }
            json.literal("}")
        }
    }

    static let jsonSeeds: [[UInt8]] = [
        #"{"surveyVersion": 3, "answers": {"fever": false, "temperature": 36.6, "mood": "ok", "note": "fine"}}"#,
        #"{"token": "eyJhbGciOiJFUzI1NiJ9.e30.AAAA"}"#, #"{"idToken": "a.b.c"}"#,
        #"[1, -2.5e-3, 0, true, false, null, "\u00e9\ud83d\ude00\n", {"a": [[]]}]"#,
        #"{"rules": [{"when": {"all": [{"question": "fever", "equals": true}]}, "color": "red", "reason": "Fever", "lastsDays": 3}]}"#,
        #"[{"name": "Clinic", "lat": 40.7, "lon": -73.9, "url": "https://example.org"}]"#,
    ].map { Array($0.utf8) }

    @Test func theStrictJSONParserAnswersEveryInputWithAValueOrItsError() {
        var accepted = 0
        for input in Fuzz.inputs(seeds: Self.jsonSeeds, count: Fuzz.cases(6_000)) {
            do {
                let value = try JSONValue(parsing: input)
                accepted += 1
                // What was accepted reads back as the same value.
                #expect(try JSONValue(parsing: Array(Self.text(of: value).utf8)) == value, "\(String(decoding: input, as: UTF8.self))")
                // And the byte writer writes the same text for it.
                var json = JSONBytes()
                Self.bytes(of: value, to: &json)
                #expect(json.text == Self.text(of: value), "\(String(decoding: input, as: UTF8.self))")
            } catch {
                #expect((0...input.count).contains(error.offset), "offset \(error.offset) outside \(input.count) bytes")
            }
        }
        // The mutations keep some inputs valid: the accepting paths are exercised too.
        #expect(accepted > 100)
    }

    // MARK: base64url

    @Test func base64urlDecodesOnlyTheOneCanonicalSpelling() {
        let alphabet =
            Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8) + Array("=+/. \n".utf8) + [0x00, 0xC3, 0xFF]
        var g = SeededGenerator(seed: Fuzz.seed)
        var decoded = 0
        for index in 0..<Fuzz.cases(20_000) {
            let bytes =
                index % 2 == 0
                ? Fuzz.randomBytes(maxLength: 40, alphabet: alphabet, using: &g)
                : Fuzz.mutate(Array(Base64URL.encode(Fuzz.randomBytes(maxLength: 30, using: &g)).utf8), using: &g)
            let text = String(decoding: bytes, as: UTF8.self)
            guard let data = Base64URL.decode(Substring(text)) else { continue }
            decoded += 1
            #expect(Base64URL.encode(data) == text, "\(text) decoded but is not canonical")
        }
        #expect(decoded > 1_000)
    }

    // MARK: Badge tokens

    @Test func theBadgeVerifierRefusesEveryAlteredTokenWithAReason() throws {
        let privateKey = P256.Signing.PrivateKey()
        let key = BadgeKey(kid: "k1", publicKey: privateKey.publicKey, retiredAt: nil, privateKey: privateKey)
        let now = Date(timeIntervalSince1970: 1_795_000_000)
        let claims = BadgeClaims(campus: "north", sub: "s", date: "2026-11-18", color: "green", iat: 1_795_000_000, exp: 1_795_050_000)
        let genuine = try BadgeToken.sign(claims, with: key)
        #expect(BadgeToken.verify(genuine, campus: "north", keys: [key], now: now) == .valid(claims))
        /// Signs whatever payload bytes it is given with the campus's real key.
        func signed(_ payload: [UInt8]) throws -> String {
            let input = key.encodedHeader + "." + Base64URL.encode(payload)
            return input + "." + Base64URL.encode(try privateKey.signature(for: Array(input.utf8)).rawRepresentation)
        }
        var reasons: [String: Int] = [:]
        // Altered tokens: nothing but the genuine text verifies.
        for input in Fuzz.inputs(seeds: [Array(genuine.utf8)], count: Fuzz.cases(4_000)) {
            let token = String(decoding: input, as: UTF8.self)
            switch BadgeToken.verify(token, campus: "north", keys: [key], now: now) {
            case .valid: #expect(token == genuine, "an altered token verified: \(token)")
            case .invalid(let reason): reasons[reason.rawValue, default: 0] += 1
            }
        }
        // Claims signed with the real key (a leaked key, or a bug in signing): only claims of the
        // promised shape are accepted.
        for payload in Fuzz.inputs(seeds: [Array(claims.json.utf8)], count: Fuzz.cases(2_000)) {
            switch BadgeToken.verify(try signed(payload), campus: "north", keys: [key], now: now) {
            case .valid(let read):
                #expect(LocalDate(read.date) != nil && BadgeColor(rawValue: read.color) != nil)
                #expect(abs(read.exp) < 1 << 53 && abs(read.iat) < 1 << 53 && read.exp > 1_795_000_000)
                #expect(read.campus == "north")
            case .invalid(let reason): reasons["signed " + reason.rawValue, default: 0] += 1
            }
        }
        // Every check was reached, not only the first.
        for reason in ["malformed", "unknown-key", "bad-signature", "signed malformed", "signed other-campus", "signed expired"] {
            #expect(reasons[reason, default: 0] > 0, "no input was refused as \(reason): \(reasons)")
        }
    }

    // MARK: Cursors

    @Test func cursorsAreEitherOnesTheAPIGivesOutOrRefused() {
        let seeds = [
            "r.1795000000123456.5f0c2a1e-0000-4000-8000-000000000001", "y.0.00000000-0000-0000-0000-000000000000",
            "2026-11-20", "1970-01-01",
        ].map { Array($0.utf8) }
        var parsed = 0
        for input in Fuzz.inputs(seeds: seeds, count: Fuzz.cases(10_000)) {
            let text = String(decoding: input, as: UTF8.self)
            if let cursor = StatisticsStore.FollowUpCursor(text) {
                parsed += 1
                #expect(StatisticsStore.FollowUpCursor(cursor.description) == cursor)
                // A time PostgreSQL can hold: a cursor is never turned into a database error.
                #expect((0...StatisticsStore.FollowUpCursor.latestMicroseconds).contains(cursor.submittedMicroseconds), "\(text)")
            }
            if let date = LocalDate(text) {
                parsed += 1
                #expect(date.description == text, "history cursor \(text) read as \(date)")
                #expect(PostgresDate(year: date.year, month: date.month, day: date.day) != nil)
            }
        }
        #expect(parsed > 100)
        // A time no submission can have had is no cursor this API gave out.
        #expect(StatisticsStore.FollowUpCursor("r.999999999999999999.5f0c2a1e-0000-4000-8000-000000000001") == nil)
        #expect(StatisticsStore.FollowUpCursor("r.253402300799999999.5f0c2a1e-0000-4000-8000-000000000001") != nil)
    }

    // MARK: CSV and location files

    static let csvSeeds: [[UInt8]] = [
        "email,name,roles\nana@example.edu,Ana,screener\n\"bo@example.edu\",\"Bo, \"\"B\"\"\",admin;health-officer\n",
        "name,address,lat,lon,hours,phone,url,notes\nClinic,\"1 Main St, Town\",40.7,-73.9,9-5,555,https://example.org,\"walk-in\nonly\"\n",
        "lon,lat,name\n-73.9,40.7,Field House\r\n",
        "\u{FEFF}email,name\r\n\u{FEFF}ana@example.edu,Ana\r\n",  // a spreadsheet's "CSV UTF-8": a byte order mark first
        #"[{"name": "Clinic", "lat": 40.7, "lon": -73.9}, {"name": "B", "lat": -90, "lon": 180, "url": "https://b.example"}]"#,
    ].map { Array($0.utf8) }

    /// The reader makes an unquoted field straight from its stretch of the bytes; it must give
    /// what reading every byte one at a time gives (quotes only at a field's start, `""`
    /// inside quotes, a CR dropped only before an LF outside quotes, lines counted inside
    /// quotes), the same records on the same lines or the same unclosed quote.
    @Test func csvReaderAgreesWithReadingByteByByte() throws {
        // Bytes the reader treats apart, and a few others, so that the inputs are mostly them.
        let alphabet: [UInt8] = Array(",\"\r\n\r\n,\"ab ".utf8) + [0xC3, 0xA9]
        var generator = SeededGenerator(seed: Fuzz.seed)
        var inputs = Fuzz.inputs(seeds: Self.csvSeeds, count: Fuzz.cases(3_000))
        for _ in 0..<Fuzz.cases(3_000) { inputs.append(Fuzz.randomBytes(maxLength: 24, alphabet: alphabet, using: &generator)) }
        inputs += [
            Array("a,\"b\"\"c\",\"\"\r\nd\r\"e\",f\"\"g\r".utf8), Array("\"x\ny\"z,\r\r\n,".utf8), [0x22], [0x0D], [],
            [0xEF, 0xBB, 0xBF], [0xEF, 0xBB, 0xBF, 0x22, 0x61, 0x22, 0x2C], [0xEF, 0xBB], [0x61, 0xEF, 0xBB, 0xBF],
        ]
        var agreed = 0
        for input in inputs {
            var fast: [(Int, [String])] = [], slow: [(Int, [String])] = []
            var fastError: Int? = nil
            let slowError: Int?
            do { try CSV.forEachRecord(in: Data(input)) { fast.append(($0, $1)) } } catch let error as CSV.UnclosedQuote {
                fastError = error.line
            }
            slowError = Self.recordsByteByByte(input) { slow.append(($0, $1)) }
            let same = fastError == slowError && fast.count == slow.count && zip(fast, slow).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
            #expect(same, "\(String(decoding: input, as: UTF8.self).debugDescription): \(fast) against \(slow)")
            if same { agreed += 1 }
        }
        #expect(agreed == inputs.count)
    }

    /// RFC 4180 read one byte at a time, as `CSV.forEachRecord` read before it took unquoted
    /// fields whole: the oracle for it. Returns the line of a quote never closed. A byte order
    /// mark that starts the input is skipped (only there).
    static func recordsByteByByte(_ bytes: [UInt8], _ body: (Int, [String]) -> Void) -> Int? {
        var fields: [String] = [], field: [UInt8] = []
        var inQuotes = false, quoted = false
        var line = 1, recordLine = 1, index = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        func endField() {
            fields.append(String(decoding: field, as: UTF8.self))
            field.removeAll()
            quoted = false
        }
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            if inQuotes {
                if byte == 0x22 {
                    if index < bytes.count, bytes[index] == 0x22 {
                        field.append(0x22)
                        index += 1
                    } else {
                        inQuotes = false
                    }
                } else {
                    if byte == 0x0A { line += 1 }
                    field.append(byte)
                }
                continue
            }
            switch byte {
            case 0x22 where field.isEmpty && !quoted: (inQuotes, quoted) = (true, true)
            case 0x2C: endField()
            case 0x0D where index < bytes.count && bytes[index] == 0x0A: break
            case 0x0A:
                endField()
                body(recordLine, fields)
                fields.removeAll()
                line += 1
                recordLine = line
            default: field.append(byte)
            }
        }
        if inQuotes { return recordLine }
        if !field.isEmpty || !fields.isEmpty || quoted {
            endField()
            body(recordLine, fields)
        }
        return nil
    }

    @Test func csvAndLocationFilesAreReadOrRefusedWithALine() throws {
        let campus = Campus(
            id: CampusID(UUID()), slug: "north", name: "North", timeZone: "UTC", deadlineMinute: 600, reminderMinute: 480,
            emailDomains: ["example.edu"], sessionLifetimeSeconds: 3600, retentionDays: 30, statsMinCount: 10,
            settings: PostgresJSON("{}"), createdAt: Date())
        var outcomes = (records: 0, locations: 0, users: 0)
        for input in Fuzz.inputs(seeds: Self.csvSeeds, count: Fuzz.cases(5_000)) {
            let text = String(decoding: input, as: UTF8.self)
            do {
                let records = try CSV.records(text)
                outcomes.records += 1
                #expect(zip(records, records.dropFirst()).allSatisfy { $0.line < $1.line } && (records.first?.line ?? 1) >= 1)
            } catch let error as CSV.UnclosedQuote {
                #expect(error.line >= 1)
            }
            do {
                let locations = try TestingLocation.parseList(Data(input))
                outcomes.locations += 1
                #expect(locations.allSatisfy { $0.problem == nil })
            } catch let error as TestingLocationFileError {
                #expect(error.line >= 1)
            }
            do {
                let entries = try UserStore.parseImport(text, campus: campus)
                outcomes.users += 1
                #expect(entries.allSatisfy { $0.email.hasSuffix("@example.edu") && UserStore.isStorableName($0.name) })
                #expect(Set(entries.map(\.email)).count == entries.count)
            } catch let error as IdentityError {
                if case .importFailed(let line, _) = error { #expect(line >= 1) } else { Issue.record("unexpected \(error)") }
            }
        }
        #expect(outcomes.records > 100 && outcomes.locations > 50 && outcomes.users > 50, "\(outcomes)")
    }

    // MARK: Health records

    static let recordSeeds: [[UInt8]] = [
        """
        {"resourceType": "Observation", "status": "final", "code": {"coding": [{"system": "http://loinc.org", "code": "94500-6"}]},
         "subject": {"identifier": {"system": "mailto", "value": "a@example.edu"}}, "specimen": {"identifier": {"value": "S-1"}},
         "effectiveDateTime": "2026-11-20T09:30:00.5-05:00", "issued": "2026-11-20T15:00:00Z",
         "valueCodeableConcept": {"coding": [{"system": "http://snomed.info/sct", "code": "260373001"}]}}
        """,
        """
        {"resourceType": "Bundle", "entry": [{"resource": {"resourceType": "Observation", "status": "corrected",
         "code": {"coding": [{"system": "http://loinc.org", "code": "94558-4"}]}, "valueString": "not detected",
         "subject": {"identifier": {"system": "mailto", "value": "mailto:B@Example.edu"}}, "specimen": {"identifier": {"value": "S-2"}},
         "effectiveDateTime": "2026-11-20", "issued": "2026-11-21T00:00:00+14:00"}}]}
        """,
        "specimen_id,member,collected_at,resulted_at,test_code,result\nS-1,a@example.edu,2026-11-20,2026-11-20T15:00:00Z,94500-6,detected\r\n",
    ].map { Array($0.utf8) }

    /// FHIR Observations and Bundles, the results file and FHIR's times: each input gives
    /// results with every element as promised, or problems naming elements, never both and
    /// never a trap (a date in year 0, a leap second, an offset of 23:59, a fraction of 40 digits).
    @Test func labResultsAreReadOrRefusedNamingTheElement() throws {
        let zone = try #require(TimeZone(identifier: "America/New_York"))
        let now = Date(timeIntervalSince1970: 1_795_651_200)  // 2026-11-26T00:00:00Z: after the seeds' results
        var outcomes = (fhir: 0, csv: 0, refused: 0)
        func valid(_ result: LabResult) -> Bool {
            LabResult.acceptedTests[result.testCode] != nil
                && (LabResult.email(result.subject) == result.subject
                    || LabResult.memberID(String(result.subject.dropFirst(LabResult.memberIDPrefix.count))) == result.subject)
                && (1...200).contains(result.specimenID.utf8.count) && result.collectedAt.timeIntervalSince1970.isFinite
                && result.resultedAt.timeIntervalSince1970.isFinite
                && max(result.collectedAt, result.resultedAt) <= now.addingTimeInterval(86_400)
                && result.resultedAt >= result.collectedAt.addingTimeInterval(-86_400)
        }
        for input in Fuzz.inputs(seeds: Self.recordSeeds, count: Fuzz.cases(5_000)) {
            if let json = try? JSONValue(parsing: input) {
                let (results, problems) = FHIRObservations.parse(json, zone: zone, now: now)
                #expect(results.allSatisfy(valid))
                #expect(
                    problems.allSatisfy { $0.field.hasPrefix("Observation") || $0.field.hasPrefix("Bundle") || $0.field == "resourceType" })
                if problems.isEmpty, !results.isEmpty { outcomes.fhir += 1 } else { outcomes.refused += 1 }
            }
            let (rows, problems) = ResultsCSV.parse(Data(input), zone: zone, now: now)
            #expect(problems.isEmpty || rows.isEmpty, "a file with a problem gives no result")
            #expect(rows.allSatisfy(valid))
            #expect(problems.allSatisfy { $0.field.hasPrefix("line ") || $0.field == "file" })
            if problems.isEmpty, !rows.isEmpty { outcomes.csv += 1 }
            let text = String(decoding: input.prefix(40), as: UTF8.self)
            if let instant = FHIRTime.parse(text, zone: zone) { #expect(instant.timeIntervalSince1970.isFinite) }
        }
        #expect(outcomes.fhir > 10 && outcomes.csv > 10 && outcomes.refused > 100, "\(outcomes)")
    }

    /// SMART Health Cards: the specification's example card as QR text, as a file, and its JWS.
    static let cardFixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appending(path: "SmartHealthCards")

    /// A card's QR text, a `.smart-health-card` file or a JWS: a verified card with doses, or a
    /// `SmartHealthCards.Refused`; never a trap (digits past 77, a chunk 0 of 0, a payload
    /// that is not DEFLATE or inflates past the bound, a JWS of two parts).
    @Test func smartHealthCardsAreVerifiedOrRefusedWithAReason() throws {
        let qr = String(decoding: try Data(contentsOf: Self.cardFixtures.appending(path: "example-00.qr.txt")), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let jwks = try JSONValue(parsing: Array(try Data(contentsOf: Self.cardFixtures.appending(path: "example-issuer-jwks.json"))))
        let issuer = TrustedIssuer(
            iss: "https://spec.smarthealth.cards/examples/issuer", name: "example", keys: try TrustedIssuer.keys(jwks: jwks))
        let jws = try SmartHealthCards.jws(qr: [qr])
        let seeds = [qr, #"{"verifiableCredential": ["\#(jws)"]}"#, jws, "shc:/1/2/5676\nshc:/2/2/2909"].map { Array($0.utf8) }
        var outcomes = (verified: 0, refused: 0)
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        for input in Fuzz.inputs(seeds: seeds, count: Fuzz.cases(3_000)) {
            let text = String(decoding: input, as: UTF8.self)
            var candidates: [String] = []
            do { candidates.append(try SmartHealthCards.jws(qr: text.split(separator: "\n").map(String.init))) } catch {
                outcomes.refused += 1
            }
            do { candidates += try SmartHealthCards.jws(file: input) } catch { outcomes.refused += 1 }
            candidates.append(text)
            for candidate in candidates {
                do {
                    let card = try SmartHealthCards.verify(SmartHealthCards.open(candidate), issuer: issuer, now: now)
                    #expect(!card.doses.isEmpty && card.doses.allSatisfy { SmartHealthCards.covidVaccines.contains($0.cvx) })
                    outcomes.verified += 1
                } catch { outcomes.refused += 1 }
            }
        }
        #expect(outcomes.verified > 0 && outcomes.refused > 1_000, "\(outcomes)")
    }

    static let communitySeeds: [[UInt8]] = [
        "date,county,state,fips,cases,deaths\n2026-10-01,Alpha,Testland,99001,100,1\n2026-10-02,Alpha,Testland,99001,90,\n",
        "date,county,state,fips,cases,deaths\r\n2026-10-01,\"Beta, North\",Testland,,5,0\r\n2026-10-01,Unknown,Testland,,1,0\r\n",
        "date,state,fips,cases,deaths\n2026-10-01,Testland,99,7,0\n2026-10-01,Testland,99,8,0\n",
        "fips,population\n99001,200000\n\"a:b\",5\n",
        #"{"regions": [{"id": "x1", "name": "X", "population": 10, "days": [{"date": "2026-11-01", "newCases": -3, "newDeaths": 0, "tests": 9}]}]}"#,
    ].map { Array($0.utf8) }

    /// The community files and feeds: a dataset whose every region has a valid id and dates
    /// in order, or an error naming a line; never a trap (a total near Int32.max, a negative
    /// day, a date in year 0). The streaming CSV reader agrees with `CSV.records`.
    @Test func communityFilesAndFeedsAreReadOrRefused() throws {
        var outcomes = (csv: 0, feeds: 0)
        for input in Fuzz.inputs(seeds: Self.communitySeeds, count: Fuzz.cases(5_000)) {
            let data = Data(input)
            do {
                let dataset = try CommunityDataset.parseCumulativeCSV(data)
                outcomes.csv += 1
                for region in dataset.regions {
                    #expect(CommunityRegion.isValidID(region.id))
                    let days = dataset.series(region: region.id)?.days ?? []
                    #expect(zip(days, days.dropFirst()).allSatisfy { $0.date < $1.date })
                    _ = CommunityFigures(series: CommunitySeries(region: region, days: days), settings: CommunityRiskSettings())
                }
            } catch let error as CommunityDataFileError {
                #expect(error.line >= 1)
            } catch is CSV.UnclosedQuote {}
            do {
                #expect(try CommunityDataset.parsePopulation(data).allSatisfy { CommunityRegion.isValidID($0.key) && $0.value > 0 })
            } catch let error as CommunityDataFileError {
                #expect(error.line >= 1)
            } catch is CSV.UnclosedQuote {}
            if let dataset = try? CommunityJSONFeedProvider.parse(data) {
                outcomes.feeds += 1
                for region in dataset.regions {
                    let series = dataset.series(region: region.id)
                    #expect(series != nil && CommunityRegion.isValidID(region.id))
                    if let series { _ = CommunityFigures(series: series, settings: CommunityRiskSettings()) }
                }
            }
            // ASCII without CR: where the two readers must agree (`CSV.records` reads grapheme
            // clusters, so a combining mark after a comma joins it; CRLF inside quotes differs).
            if input.allSatisfy({ $0 < 0x80 && $0 != 0x0D }) {
                var streamed: [[String]] = []
                let whole = try? CSV.records(String(decoding: input, as: UTF8.self))
                let streamedOK = (try? CSV.forEachRecord(in: data) { streamed.append($1) }) != nil
                #expect(streamedOK == (whole != nil))
                if let whole, streamedOK {
                    // A lone empty record (an empty file, a blank last line) is no row to either reader's callers.
                    let blank: ([String]) -> Bool = { $0 == [""] }
                    #expect(
                        whole.map(\.fields).filter { !blank($0) } == streamed.filter { !blank($0) },
                        "\(String(decoding: input, as: UTF8.self).debugDescription)")
                }
            }
        }
        #expect(outcomes.csv > 50 && outcomes.feeds > 5, "\(outcomes)")
    }

    // MARK: OIDC ID tokens

    struct IDClaims: JWTPayload {
        var iss: String
        var sub: String
        var aud: String
        var exp: Int
        var iat: Int
        var email: String
        var email_verified: Bool
        var name: String
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    @Test func theIDTokenVerifierAnswersEveryAlteredTokenWithASignInError() async throws {
        let signer = ES256PrivateKey()
        let keys = JWTKeyCollection()
        await keys.add(ecdsa: signer, kid: "k1")
        guard let parameters = signer.publicKey.parameters else { throw TestEnvironmentError("no public key parameters") }
        let jwks = #"{"keys":[{"kty":"EC","crv":"P-256","kid":"k1","alg":"ES256","x":"\#(parameters.x)","y":"\#(parameters.y)"}]}"#
        let issuer = OIDCIssuer(issuer: "https://id.example.edu", audiences: ["client"], jwks: jwks)
        let campus = Campus(
            id: CampusID(UUID()), slug: "north", name: "North", timeZone: "UTC", deadlineMinute: 600, reminderMinute: 480,
            emailDomains: ["example.edu"], sessionLifetimeSeconds: 3600, retentionDays: 30, statsMinCount: 10,
            settings: PostgresJSON("{}"), createdAt: Date())
        var logger = Logger(label: "fuzz")
        logger.logLevel = .critical
        let verifier = IDTokenVerifier(keys: JWKSCache(http: AsyncPluginHTTPClient(), logger: logger))
        let now = Int(Date().timeIntervalSince1970)
        let genuine = try await keys.sign(
            IDClaims(
                iss: issuer.issuer, sub: "s1", aud: "client", exp: now + 600, iat: now, email: "ana@example.edu", email_verified: true,
                name: "Ana"),
            kid: "k1")
        let identity = try await verifier.verify(idToken: genuine, campus: campus, issuers: [issuer])
        #expect(identity.email == "ana@example.edu")
        var refusals: [String: Int] = [:]
        for input in Fuzz.inputs(seeds: [Array(genuine.utf8)], count: Fuzz.cases(3_000)) {
            let token = String(decoding: input, as: UTF8.self)
            do {
                let accepted = try await verifier.verify(idToken: token, campus: campus, issuers: [issuer])
                // Only the signed header and payload verify (a signature may be spelt twice).
                #expect(token.split(separator: ".").prefix(2) == genuine.split(separator: ".").prefix(2), "\(token)")
                #expect(accepted == identity)
            } catch let error as IdentityError {
                refusals["\(error)".prefix(24).description, default: 0] += 1
            } catch {
                Issue.record("not a IdentityError: \(error) for \(token)")
            }
        }
        #expect(refusals.count >= 3, "\(refusals)")
    }

    // MARK: Headers and key sets

    @Test func acceptLanguagePicksAnOfferedLanguageOrNone() {
        let offered: Set<String> = ["es", "pt-BR", "fr"]
        let seeds = ["es-MX,es;q=0.9,en;q=0.8", "*;q=0.1, pt-BR;q=1e400, fr;q=nan", "en;q=-1,fr;q=0.000", "PT-br"].map { Array($0.utf8) }
        var chosen = 0
        for input in Fuzz.inputs(seeds: seeds, count: Fuzz.cases(10_000)) {
            guard let language = Questionnaire.bestLanguage(String(decoding: input, as: UTF8.self), available: offered) else { continue }
            chosen += 1
            #expect(offered.contains(language))
        }
        #expect(chosen > 500)
    }

    @Test func jwksDocumentsGiveKeysOrAnError() async throws {
        let signer = ES256PrivateKey()
        guard let parameters = signer.publicKey.parameters else { throw TestEnvironmentError("no public key parameters") }
        let seeds = [
            #"{"keys":[{"kty":"EC","crv":"P-256","kid":"k1","alg":"ES256","x":"\#(parameters.x)","y":"\#(parameters.y)"}]}"#,
            #"{"keys":[{"kty":"RSA","kid":"r1","alg":"RS256","n":"sXchDaQebHnPiGvyDOAT4saGEUetSyo9MKLOoWFsueri23bOdgWp4Dy1WlUzewbgBHod5pcM9H95GQRV3JDXboIRROSBigeC5yjU1hGzHHyXss8UDprecbAYxknTcQkhslANGRUZmdTOQ5qTRsLAt6BTYuyvVRdhS8exSZEy_c4gs_7svlJJQ4H9_NxsiIoLwAEk7-Q3UXERGYw_75IDrGA84-lA_-Ct4eTlXHBIY2EaV7t7LjJaynVJCpkv4LKjTTAumiGUIuQhrNhZLuF_RJLqHpM2kgWFLU7-VTdL1VbC2tejvcI2BlMkEpk1BzBZI0KQB0GaDWFLN-aEAw3vRw","e":"AQAB"},{"kty":"oct","k":"c2VjcmV0"}]}"#,
        ].map { Array($0.utf8) }
        var parsed = 0
        for input in Fuzz.inputs(seeds: seeds, count: Fuzz.cases(2_000)) {
            guard let (keys, rejected) = try? await KeySet.parse(Data(input)) else { continue }
            parsed += 1
            // Every key of the document is kept or rejected, never both, and each kept one has
            // its own id: the signature check finds one key by kid.
            let offered = (try? JSONSerialization.jsonObject(with: Data(input)) as? [String: Any])?["keys"] as? [Any]
            #expect(keys.keyIDs.count <= keys.count)
            if let offered { #expect(keys.count + rejected.count == offered.count, "\(String(decoding: input, as: UTF8.self))") }
        }
        #expect(parsed > 50)
    }
}
