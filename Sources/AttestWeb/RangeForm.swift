import AttestPlugins
import AttestServer
import Hummingbird
import Surveys

/// A page's form of two dates (`from`, `to`): the range they name, or why not in the page's
/// words beside each field, with what was typed kept. An end left empty takes `fallback`'s.
struct RangeForm {
    private(set) var range: DateRange?
    private(set) var errors = FormErrors()
    private let from: String
    private let to: String

    init(_ request: Request, fallback: DateRange, visit: WebVisit) {
        let query = request.uri.queryParameters
        func value(_ name: String) -> String? { query.get(name).map { String($0) }.flatMap { $0.isEmpty ? nil : $0 } }
        from = value("from") ?? fallback.from.description
        to = value("to") ?? fallback.to.description
        switch DateRange.check(from: from, to: to) {
        case .success(let range): self.range = range
        case .failure(let list):
            for fault in list.faults {
                errors.add(fault.field, anchor: fault.field, Self.message(fault, visit: visit))
            }
        }
    }

    /// The range, or a 422 saying in the page's words what is wrong (for a download, which has
    /// no form to show it in).
    func checked(_ visit: WebVisit) throws -> DateRange {
        guard let range else {
            let messages = ["from", "to"].compactMap { errors[$0] }
            throw Problem(
                .unprocessableContent, slug: "validation", title: visit["errorWord"], detail: messages.joined(separator: ". "),
                errors: ["from", "to"].compactMap { field in errors[field].map { .init(field: field, message: $0) } })
        }
        return range
    }

    /// The form's fields for the `rangefields` partial.
    var fields: [String: Any] { ["from": errors.field("from", value: from), "to": errors.field("to", value: to)] }

    private static func message(_ fault: DateRange.Fault, visit: WebVisit) -> String {
        func day(_ date: LocalDate) -> String { WebFormat.date(date, campus: visit.campus, language: visit.language) }
        switch fault.kind {
        case .missing, .notADate:
            var text = ""
            if case .notADate(let sent) = fault.kind { text = String(sent.prefix(40)) }
            return visit.format(fault.field == "from" ? "rangeFromNotADate" : "rangeToNotADate", text)
        case .beforeFrom(let start): return visit.format("rangeToBeforeFrom", day(start))
        case .tooLong(let start, let days):
            return visit.format("rangeTooLong", "\(DateRange.maxDays)", day(start), "\(days)")
        }
    }
}
