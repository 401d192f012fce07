/// A table of the words one message or page says, with a value of it for each language the
/// server writes in: a struct of strings, so a language that lacks a word does not compile.
/// `{name}`s in the words are filled with `String.filled`; each language's words of one field
/// name the same placeholders (`WordingTests`).
public protocol Wording: Sendable {
    static var english: Self { get }
    static var spanish: Self { get }
}

extension Wording {
    /// The words in `language` (a primary tag of `Wording.languages`), English otherwise.
    public static func of(_ language: String) -> Self { language == "es" ? spanish : english }

    /// Each language's words, by its tag.
    public static var byLanguage: [String: Self] { ["en": english, "es": spanish] }
}

/// The languages the server writes its own words in (messages, pages, PDFs), English first:
/// the one `Wording.of` falls back to.
public enum WrittenLanguages {
    public static let all = ["en", "es"]
}
