import AttestPlugins
import Foundation

/// One laboratory result as received, before it is matched to a member.
public struct LabResult: Sendable, Equatable {
    /// The specimen's identifier: a later result for the same specimen is a correction.
    public var specimenID: String
    /// Whom it is about, as the laboratory named them: an email address, lowercased, or
    /// `id:` and the member's campus id (`LabResult.memberIDPrefix`).
    public var subject: String
    /// The LOINC code of the test (one of `LabResult.acceptedTests`).
    public var testCode: String
    public var detected: Bool
    public var collectedAt: Date
    public var resultedAt: Date

    public init(specimenID: String, subject: String, testCode: String, detected: Bool, collectedAt: Date, resultedAt: Date) {
        (self.specimenID, self.subject, self.testCode, self.detected, self.collectedAt, self.resultedAt) = (
            specimenID, subject, testCode, detected, collectedAt, resultedAt
        )
    }

    /// The SARS-CoV-2 tests accepted, by LOINC code, with their LOINC short names.
    public static let acceptedTests: [String: String] = [
        "94500-6": "SARS-CoV-2 RNA Resp Ql NAA+probe",
        "94309-2": "SARS-CoV-2 RNA XXX Ql NAA+probe",
        "94558-4": "SARS-CoV-2 Ag Resp Ql IA.rapid",
        "95209-3": "SARS-CoV+SARS-CoV-2 Ag Resp Ql IA.rapid",
        "94531-1": "SARS-CoV-2 RNA Pnl Resp NAA+probe",
        "94533-7": "SARS-CoV-2 N gene Resp Ql NAA+probe",
        "94534-5": "SARS-CoV-2 RdRp gene Resp Ql NAA+probe",
        "94559-2": "SARS-CoV-2 ORF1ab region Resp Ql NAA+probe",
        "94756-4": "SARS-CoV-2 RNA Resp Ql NAA N1+N2",
        "94757-2": "SARS-CoV-2 RNA Resp Ql NAA N2",
        "94845-5": "SARS-CoV-2 RNA Saliva Ql NAA+probe",
        "96119-3": "SARS-CoV-2 Ag Upper resp Ql IA",
        "96448-6": "SARS-CoV-2 RNA Saliva Ql NAA+non-probe",
        "97097-0": "SARS-CoV-2 Ag Upper resp Ql IA.rapid",
    ]

    /// SNOMED CT's "detected" and "not detected".
    public static let detectedCode = "260373001", notDetectedCode = "260415000"

    /// A result in words or as SNOMED CT: detected (positive) or not detected (negative);
    /// nil for anything else (inconclusive results are not kept).
    public static func detected(from text: String) -> Bool? {
        switch text.lowercased().trimmingBlanks() {
        case "detected", "positive", detectedCode: true
        case "not detected", "negative", notDetectedCode: false
        default: nil
        }
    }

    /// The longest specimen identifier and subject kept.
    static let maxSpecimenID = 200, maxSubject = 320

    /// A subject identifier read as an email address: lowercased, one `@` with text either
    /// side, no spaces or controls, at most 320 bytes; nil otherwise.
    public static func email(_ text: String) -> String? {
        let value = text.hasPrefix("mailto:") ? String(text.dropFirst(7)) : text
        let bytes = Array(value.utf8)
        guard (3...maxSubject).contains(bytes.count), bytes.allSatisfy({ $0 > 0x20 && $0 != 0x7F }),
            bytes.filter({ $0 == UInt8(ascii: "@") }).count == 1, bytes.first != UInt8(ascii: "@"),
            bytes.last != UInt8(ascii: "@")
        else { return nil }
        return value.lowercased()
    }

    /// A subject named by the campus's own id (a student or employee number): `id:` and it.
    public static let memberIDPrefix = "id:"

    /// A campus id as a subject: `id:` and 1 to 100 bytes without spaces or control
    /// characters; nil otherwise.
    public static func memberID(_ text: String) -> String? {
        let bytes = text.utf8
        guard (1...100).contains(bytes.count), !bytes.contains(where: { $0 <= 0x20 || $0 == 0x7F }) else { return nil }
        return memberIDPrefix + text
    }

    /// A CSV's `member`: an email address (it has an `@`), else the member's campus id.
    public static func member(_ text: String) -> String? {
        text.utf8.contains(UInt8(ascii: "@")) ? email(text) : memberID(text)
    }

    /// A specimen identifier: 1 to 200 bytes, no control characters.
    static func specimen(_ text: String) -> String? {
        let bytes = text.utf8
        guard (1...maxSpecimenID).contains(bytes.count), !bytes.contains(where: { $0 < 0x20 || $0 == 0x7F }) else { return nil }
        return text
    }

    /// How far the checks of a result's times look past what they compare: a date without a
    /// time is the start of the campus's day, and laboratories' clocks and zones differ.
    static let timeLeeway: TimeInterval = 86_400

    /// What is wrong with a result's times, if anything, each for `collected` or `resulted`:
    /// a time after `now` (a year typed wrong: a positive result would isolate its member for
    /// years, a negative one count as their latest test for as long), and a result before its
    /// specimen, each beyond `timeLeeway`.
    static func timeProblems(collected: Date, resulted: Date, now: Date) -> [(resulted: Bool, message: String)] {
        var problems: [(resulted: Bool, message: String)] = []
        let latest = now.addingTimeInterval(timeLeeway)
        if collected > latest {
            problems.append((false, "is in the future: a specimen is collected before its result is sent (check the year)"))
        }
        if resulted > latest { problems.append((true, "is in the future: a result is issued before it is sent (check the year)")) }
        if resulted < collected.addingTimeInterval(-timeLeeway) {
            problems.append((true, "is before the specimen was collected: a result cannot come before its specimen"))
        }
        return problems
    }
}

/// FHIR's dates and instants, strictly: `YYYY-MM-DD` (the start of that day in `zone`) or
/// `YYYY-MM-DDThh:mm:ss[.fraction](Z|±hh:mm)`; nil for anything else, including a partial
/// date (`2021-05`) or a time without its offset.
public enum FHIRTime {
    public static func parse(_ text: String, zone: TimeZone) -> Date? {
        var text = text
        return text.withUTF8 { parse($0, zone: zone) }
    }

    /// `parse` on the text's UTF-8 bytes (a results file's 200,000 times without an array each).
    static func parse(_ b: UnsafeBufferPointer<UInt8>, zone: TimeZone) -> Date? {
        func digits(_ start: Int, _ count: Int) -> Int? {
            guard start + count <= b.count else { return nil }
            var value = 0
            for i in start..<(start + count) {
                guard b[i] >= 0x30, b[i] <= 0x39 else { return nil }
                value = value * 10 + Int(b[i] - 0x30)
            }
            return value
        }
        guard b.count >= 10, let year = digits(0, 4), b[4] == UInt8(ascii: "-"), let month = digits(5, 2), b[7] == UInt8(ascii: "-"),
            let day = digits(8, 2), let date = LocalDate(calendarYear: year, month: month, day: day)
        else { return nil }
        if b.count == 10 { return date.start(in: zone) }
        guard b.count >= 20, b[10] == UInt8(ascii: "T"), let hour = digits(11, 2), b[13] == UInt8(ascii: ":"), let minute = digits(14, 2),
            b[16] == UInt8(ascii: ":"), let second = digits(17, 2), hour < 24, minute < 60, second < 61
        else { return nil }
        var i = 19
        var fraction = 0.0
        if b[i] == UInt8(ascii: ".") {
            i += 1
            var scale = 0.1
            let start = i
            while i < b.count, b[i] >= 0x30, b[i] <= 0x39, i - start < 9 {
                fraction += Double(b[i] - 0x30) * scale
                scale /= 10
                i += 1
            }
            guard i > start else { return nil }
        }
        guard i < b.count else { return nil }
        var offset = 0
        if b[i] == UInt8(ascii: "Z") {
            guard i + 1 == b.count else { return nil }
        } else {
            guard b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-"), i + 6 == b.count, let oh = digits(i + 1, 2),
                b[i + 3] == UInt8(ascii: ":"), let om = digits(i + 4, 2), oh < 24, om < 60
            else { return nil }
            offset = (oh * 3600 + om * 60) * (b[i] == UInt8(ascii: "-") ? -1 : 1)
        }
        let days = LocalDate(year: 1970, month: 1, day: 1).days(until: date)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + min(second, 59) - offset
        return Date(timeIntervalSince1970: Double(seconds) + fraction)
    }
}

/// FHIR R4 `Observation`s, alone or in a `Bundle`, read into results; every problem named by
/// its element (`Observation.code`, `Bundle.entry[2].resource.issued`).
public enum FHIRObservations {
    /// The most observations one request may carry.
    public static let maxEntries = 5_000

    /// `now`: the receiving server's clock, which no result's times may pass (`LabResult.timeProblems`).
    public static func parse(_ json: JSONValue, zone: TimeZone, memberIDSystem: String? = nil, now: Date) -> (
        results: [LabResult], problems: [RecordsError.Problem]
    ) {
        guard case .object(let resource) = json else {
            return ([], [.init("resourceType", "the body must be a FHIR Observation or a Bundle of them (a JSON object)")])
        }
        switch resource["resourceType"] {
        case .string("Observation"):
            var problems: [RecordsError.Problem] = []
            let result = observation(
                resource, at: "Observation", zone: zone, memberIDSystem: memberIDSystem, now: now, problems: &problems)
            return (result.map { [$0] } ?? [], problems)
        case .string("Bundle"):
            return bundle(resource, zone: zone, memberIDSystem: memberIDSystem, now: now)
        default:
            return ([], [.init("resourceType", "must be \"Observation\" or \"Bundle\"")])
        }
    }

    static func bundle(
        _ bundle: [String: JSONValue], zone: TimeZone, memberIDSystem: String?, now: Date
    ) -> ([LabResult], [RecordsError.Problem]) {
        guard case .array(let entries)? = bundle["entry"], !entries.isEmpty else {
            return ([], [.init("Bundle.entry", "is required: an array of entries, each with an Observation as its resource")])
        }
        guard entries.count <= maxEntries else {
            return ([], [.init("Bundle.entry", "has \(entries.count) entries; at most \(maxEntries) go in one request: send several")])
        }
        var results: [LabResult] = [], problems: [RecordsError.Problem] = []
        results.reserveCapacity(entries.count)
        for (index, entry) in entries.enumerated() {
            let place = "Bundle.entry[\(index)].resource"
            guard case .object(let object) = entry, case .object(let resource)? = object["resource"] else {
                problems.append(.init(place, "is required: an Observation"))
                continue
            }
            guard resource["resourceType"] == .string("Observation") else {
                problems.append(.init("\(place).resourceType", "must be \"Observation\""))
                continue
            }
            if let result = observation(resource, at: place, zone: zone, memberIDSystem: memberIDSystem, now: now, problems: &problems) {
                results.append(result)
            }
        }
        return (results, problems)
    }

    static let acceptedStatuses: Set<String> = ["final", "amended", "corrected"]

    static func observation(
        _ resource: [String: JSONValue], at place: String, zone: TimeZone, memberIDSystem: String?, now: Date,
        problems: inout [RecordsError.Problem]
    ) -> LabResult? {
        let before = problems.count
        func problem(_ element: String, _ message: String) { problems.append(.init("\(place).\(element)", message)) }
        func string(_ value: JSONValue?) -> String? {
            guard case .string(let text)? = value else { return nil }
            return text
        }
        if case .string(let status)? = resource["status"] {
            if !acceptedStatuses.contains(status) {
                problem("status", "is \"\(status.prefix(40))\"; only final, amended or corrected results are taken")
            }
        } else {
            problem("status", "is required: final, amended or corrected")
        }
        // The test: a LOINC coding among the accepted ones.
        var testCode: String?
        if case .object(let code)? = resource["code"], case .array(let codings)? = code["coding"] {
            let loinc = codings.compactMap { coding -> String? in
                guard case .object(let c) = coding, string(c["system"]) == "http://loinc.org" else { return nil }
                return string(c["code"])
            }
            testCode = loinc.first { LabResult.acceptedTests[$0] != nil }
            if testCode == nil {
                problem(
                    "code",
                    loinc.isEmpty
                        ? "has no LOINC coding (system http://loinc.org)"
                        : "names no SARS-CoV-2 test this server takes (LOINC \(loinc.prefix(3).map { String($0.prefix(12)) }.joined(separator: ", "))); see the accepted codes in the README"
                )
            }
        } else {
            problem("code", "is required: a CodeableConcept with a LOINC coding of the test")
        }
        // The result: SNOMED CT detected / not detected, or those words.
        var detected: Bool?
        if case .object(let value)? = resource["valueCodeableConcept"] {
            if case .array(let codings)? = value["coding"] {
                for case .object(let c) in codings where string(c["system"]) == "http://snomed.info/sct" {
                    if let code = string(c["code"]), let found = LabResult.detected(from: code) { detected = found }
                }
            }
            if detected == nil, let text = string(value["text"]) { detected = LabResult.detected(from: text) }
            if detected == nil {
                problem(
                    "valueCodeableConcept",
                    "must be SNOMED CT \(LabResult.detectedCode) (detected) or \(LabResult.notDetectedCode) (not detected), or those words")
            }
        } else if let text = string(resource["valueString"]) {
            detected = LabResult.detected(from: text)
            if detected == nil { problem("valueString", "must be \"detected\" or \"not detected\"") }
        } else {
            problem("valueCodeableConcept", "is required: the result, detected or not detected")
        }
        // The specimen: its identifier is what a correction is known by.
        var specimen: String?
        if case .object(let reference)? = resource["specimen"], case .object(let identifier)? = reference["identifier"],
            let value = string(identifier["value"])
        {
            specimen = LabResult.specimen(value)
            if specimen == nil { problem("specimen.identifier.value", "must be 1 to 200 characters without control characters") }
        } else {
            problem("specimen.identifier", "is required: the specimen's identifier, which a corrected result repeats")
        }
        // Whom it is about.
        var subject: String?
        if case .object(let reference)? = resource["subject"], case .object(let identifier)? = reference["identifier"] {
            let system = string(identifier["system"]) ?? ""
            if system == "mailto" || system == "urn:ietf:rfc:3986" || system == "email" {
                subject = string(identifier["value"]).flatMap(LabResult.email)
                if subject == nil { problem("subject.identifier.value", "must be the member's email address") }
            } else if let memberIDSystem, system == memberIDSystem {
                subject = string(identifier["value"]).flatMap(LabResult.memberID)
                if subject == nil { problem("subject.identifier.value", "must be the member's campus id: 1 to 100 characters, no spaces") }
            } else {
                problem(
                    "subject.identifier.system",
                    memberIDSystem.map { "must be mailto (the member's email) or \($0) (the member's campus id)" }
                        ?? "must be mailto, with the member's email address as the value")
            }
        } else {
            problem("subject.identifier", "is required: {\"system\": \"mailto\", \"value\": the member's email}")
        }
        // When: collected and resulted.
        var collected: Date?, resulted: Date?
        if let text = string(resource["effectiveDateTime"]) {
            collected = FHIRTime.parse(text, zone: zone)
            if collected == nil { problem("effectiveDateTime", "must be a date or a date and time with its offset (2021-05-01T09:30:00Z)") }
        } else {
            problem("effectiveDateTime", "is required: when the specimen was collected")
        }
        if let text = string(resource["issued"]) {
            resulted = FHIRTime.parse(text, zone: zone)
            if resulted == nil { problem("issued", "must be an instant with its offset (2021-05-02T14:00:00Z)") }
        } else {
            problem("issued", "is required: when the result was issued")
        }
        if let collected, let resulted {
            for (isResulted, message) in LabResult.timeProblems(collected: collected, resulted: resulted, now: now) {
                problem(isResulted ? "issued" : "effectiveDateTime", message)
            }
        }
        guard problems.count == before, let specimen, let subject, let testCode, let detected, let collected, let resulted else {
            return nil
        }
        return LabResult(
            specimenID: specimen, subject: subject, testCode: testCode, detected: detected, collectedAt: collected, resultedAt: resulted)
    }
}

extension String {
    /// Trimmed of white space as `trimmingCharacters(in: .whitespaces)` trims, without
    /// Foundation when neither end has an ASCII space or tab or a non-ASCII byte (every field of
    /// a laboratory's file, nearly): a 100,000-row import trimmed through NSString spent a tenth
    /// of its CPU there.
    func trimmingBlanks() -> String {
        guard let first = utf8.first, let last = utf8.last else { return self }
        func plain(_ byte: UInt8) -> Bool { byte < 0x80 && byte != 0x20 && byte != 0x09 }
        return plain(first) && plain(last) ? self : trimmingCharacters(in: .whitespaces)
    }
}
