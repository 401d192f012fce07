import AttestFoundation
import Foundation

/// `attest results import`'s file: a header, then one result a line (RFC 4180):
///
///     specimen_id,member,collected_at,resulted_at,test_code,result
///     S-1001,alice@example.edu,2021-05-01T09:30:00-04:00,2021-05-02T08:00:00Z,94500-6,not detected
///
/// `member` is the member's email, or their campus id (anything without an `@`); the times are ISO 8601 with an offset, or dates (the start
/// of that day in the campus's zone); `test_code` one of `LabResult.acceptedTests`; `result`
/// detected, not detected, positive, negative or their SNOMED CT codes. Every problem is
/// named by line and column, and a file with any is refused whole.
public enum ResultsCSV {
    public static let header = ["specimen_id", "member", "collected_at", "resulted_at", "test_code", "result"]

    /// The most problems reported for one file.
    static let maxProblems = 50

    /// `now`: the clock no result's times may pass (`LabResult.timeProblems`).
    public static func parse(_ data: Data, zone: TimeZone, now: Date) -> (results: [LabResult], problems: [RecordsError.Problem]) {
        var results: [LabResult] = [], problems: [RecordsError.Problem] = []
        var sawHeader = false
        do {
            try CSV.forEachRecord(in: data) { line, fields in
                guard problems.count < maxProblems else { return }
                if !sawHeader {
                    sawHeader = true
                    let names = fields.map { $0.trimmingBlanks().lowercased() }
                    if names != header {
                        problems.append(
                            .init("line \(line)", "the header must be \(header.joined(separator: ","))\(CSV.separatorHint(fields))"))
                    }
                    return
                }
                if fields.count == 1, fields[0].isEmpty { return }  // a blank line
                guard fields.count == header.count else {
                    problems.append(
                        .init("line \(line)", "has \(fields.count) fields; a result has \(header.count)\(CSV.separatorHint(fields))"))
                    return
                }
                func problem(_ column: Int, _ message: String) { problems.append(.init("line \(line): \(header[column])", message)) }
                let specimen = LabResult.specimen(fields[0])
                if specimen == nil { problem(0, "must be 1 to 200 characters without control characters") }
                let member = LabResult.member(fields[1])
                if member == nil { problem(1, "must be the member's email address or campus id (1 to 100 characters, no spaces)") }
                let collected = FHIRTime.parse(fields[2], zone: zone), resulted = FHIRTime.parse(fields[3], zone: zone)
                if collected == nil { problem(2, "must be a date or a date and time with its offset (2021-05-01T09:30:00Z)") }
                if resulted == nil { problem(3, "must be a date or a date and time with its offset (2021-05-02T08:00:00Z)") }
                if let collected, let resulted {
                    for (isResulted, message) in LabResult.timeProblems(collected: collected, resulted: resulted, now: now) {
                        problem(isResulted ? 3 : 2, message)
                    }
                }
                let code = fields[4].trimmingBlanks()
                let accepted = LabResult.acceptedTests[code] != nil
                if !accepted { problem(4, "is not a SARS-CoV-2 test this server takes (see the README)") }
                let detected = LabResult.detected(from: fields[5])
                if detected == nil { problem(5, "must be detected or not detected (or positive, negative)") }
                guard let specimen, let member, let collected, let resulted, let detected, accepted else {
                    return
                }
                results.append(
                    LabResult(
                        specimenID: specimen, subject: member, testCode: code, detected: detected, collectedAt: collected,
                        resultedAt: resulted))
            }
        } catch let error as CSV.UnclosedQuote {
            problems.append(.init("line \(error.line)", "a quoted field is never closed"))
        } catch {
            problems.append(.init("file", "cannot be read as CSV"))
        }
        if !sawHeader { problems.append(.init("file", "is empty: it needs the header \(header.joined(separator: ","))")) }
        return (problems.isEmpty ? results : [], problems)
    }
}
