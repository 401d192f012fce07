import AttestServer

/// A form's problems as a page shows them (the GOV.UK pattern the survey follows): a summary
/// at the top linking to each field, each message by its field, the first field in error
/// focused, and the page's title beginning "Error:".
struct FormErrors {
    private(set) var items: [(field: String, anchor: String, message: String)] = []

    var isEmpty: Bool { items.isEmpty }

    /// Adds `message` for `field` (whose input has the id `anchor`), unless it has one already.
    mutating func add(_ field: String, anchor: String, _ message: String) {
        guard self[field] == nil else { return }
        items.append((field, anchor, message))
    }

    subscript(field: String) -> String? { items.first { $0.field == field }?.message }

    /// A field's template data: its value, its message and whether it takes focus.
    func field(_ name: String, value: String) -> [String: Any] {
        var data: [String: Any] = ["value": value]
        if let message = self[name] {
            data["error"] = message
            data["autofocus"] = items.first?.field == name
        }
        return data
    }

    /// What the page's error summary lists (`hasErrors`, `errors`).
    func summary(into data: inout [String: Any]) {
        guard !items.isEmpty else { return }
        data["hasErrors"] = true
        data["errors"] = items.map { ["anchor": $0.anchor, "message": $0.message] }
    }

    /// The page's title, "Error: " first when there are problems.
    func title(_ title: String, visit: WebVisit) -> String { items.isEmpty ? title : visit["errorWord"] + ": " + title }
}
