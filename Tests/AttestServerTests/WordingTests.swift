import AttestFoundation
import Testing

@testable import AttestAPI
@testable import AttestWeb
@testable import Journal
@testable import Notifications

/// The tables of words the server's messages and small pages say: each language has every
/// word, none is left empty or in English, and each names the placeholders the English does
/// (a Spanish reminder without `{campus}` would say nothing of where; one with `{name}` where
/// the English has `{host}` would leave the braces in the message).
@Suite("Words in every language")
struct WordingTests {
    /// Words kept the same in Spanish on purpose.
    static let sameInSpanish: Set<String> = []

    @Test func everyTableSaysEveryWordInEveryLanguageWithItsPlaceholders() {
        var problems: [String] = []
        problems += Self.problems(ReminderTexts.self)
        problems += Self.problems(GuestMessageTexts.self)
        problems += Self.problems(UnsubscribeWords.self)
        problems += Self.problems(ShareWords.self)
        problems += Self.problems(ExportWords.self)
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
        #expect(ReminderTexts.byLanguage.keys.sorted() == WrittenLanguages.all.sorted())
        // Every field is read: eight in the reminder's table, and the PDF's columns and kinds one by one.
        #expect(Self.words(of: ReminderTexts.english).count == 8)
        #expect(Self.words(of: ExportWords.spanish)[".kinds[\"headache\"]"] == "Dolor de cabeza")
        #expect(Self.words(of: ExportWords.spanish)[".columns[4]"] == "Intensidad")
    }

    /// The web pages' picker offers the languages the server writes in, no more and no fewer
    /// (a member's choice there is refused unless messages can be written in it).
    @Test func thePagesOfferTheLanguagesTheServerWritesIn() {
        #expect(WebText.languages.map(\.code) == WrittenLanguages.all)
    }

    /// The checks find each fault in a table made to have it.
    @Test func theChecksFindEachFault() {
        let found = Self.problems(Faulty.self)
        #expect(found.contains { $0.contains("Faulty.kept") && $0.contains("the same as the English") })
        #expect(found.contains { $0.contains("Faulty.empty") && $0.contains("empty") })
        #expect(found.contains { $0.contains("Faulty.lost") && $0.contains("[\"{name}\"]") })
        #expect(found.contains { $0.contains("Faulty.other") && $0.contains("[\"{host}\"]") })
        #expect(found.contains { $0.contains("Faulty.columns[1]") && $0.contains("missing") })
        #expect(found.count == 5, "\(found)")
    }

    static func problems<Table: Wording>(_ table: Table.Type) -> [String] {
        let name = String(describing: table)
        let english = words(of: Table.english)
        var problems: [String] = []
        for (language, wording) in Table.byLanguage where language != "en" {
            let translations = words(of: wording)
            for (path, text) in english.sorted(by: { $0.key < $1.key }) {
                let field = "\(name)\(path) (\(language))"
                guard let translated = translations[path] else {
                    // A table by key (a kind's name) may name fewer in English: it is shown as it is.
                    if !path.hasSuffix("\"]") { problems.append("\(field): missing") }
                    continue
                }
                if translated.isEmpty && !text.isEmpty { problems.append("\(field): empty") }
                if translated == text, !text.isEmpty, !sameInSpanish.contains("\(name)\(path)") {
                    problems.append("\(field): the same as the English (\(text))")
                }
                if placeholders(translated) != placeholders(text) {
                    problems.append("\(field): names \(placeholders(translated)); the English names \(placeholders(text))")
                }
            }
            for (path, text) in translations where english[path] == nil && placeholders(text) != [] {
                problems.append("\(name)\(path) (\(language)): names \(placeholders(text)), which nothing fills")
            }
        }
        return problems
    }

    /// A table's words by their path (`.field`, `.columns[2]`, `.kinds["headache"]`).
    static func words(of value: Any, path: String = "") -> [String: String] {
        switch value {
        case let text as String: return [path: text]
        case let list as [String]:
            return Dictionary(uniqueKeysWithValues: list.enumerated().map { ("\(path)[\($0.offset)]", $0.element) })
        case let table as [String: String]:
            return Dictionary(uniqueKeysWithValues: table.map { ("\(path)[\"\($0.key)\"]", $0.value) })
        default:
            var found: [String: String] = [:]
            for child in Mirror(reflecting: value).children {
                found.merge(words(of: child.value, path: "\(path).\(child.label ?? "?")")) { first, _ in first }
            }
            return found
        }
    }

    static func placeholders(_ text: String) -> [String] { text.matches(of: /\{[A-Za-z]+\}/).map { String($0.output) }.sorted() }
}

/// A table with one of each fault `WordingTests` looks for.
private struct Faulty: Wording {
    var kept, empty, lost, other: String
    var columns: [String]
    static let english = Faulty(
        kept: "Reminder", empty: "Hello", lost: "Hello {name}", other: "{host}'s guest", columns: ["Kind", "Started"])
    static let spanish = Faulty(kept: "Reminder", empty: "", lost: "Hola", other: "visita de {name}", columns: ["Tipo"])
}
