import AttestFoundation
import AttestPlugins
import AttestServer
import Foundation

/// The pages' words in each language they are offered in: one file a language,
/// `Web/Resources/texts/<code>.json` (an object of texts by key, embedded with the templates).
/// Every language has every key English has, with the same `{0}`, `{1}` … (filled by
/// `WebVisit.format`); a test holds them to that. English is still the fallback.
enum WebText {
    /// The languages the pages speak, in the picker's order.
    static let languages: [(code: String, name: String)] = [("en", "English"), ("es", "Español")]

    /// The language to speak: the `attest-lang` cookie's when it names one offered, else the
    /// best of `Accept-Language` ("es-MX" picks "es"), else English.
    static func language(cookie: String?, acceptLanguage: String?) -> String {
        if let cookie, languages.contains(where: { $0.code == cookie }) { return cookie }
        guard let header = acceptLanguage else { return "en" }
        var best: (code: String, weight: Double)?
        for part in header.split(separator: ",").prefix(20) {
            let pieces = part.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            guard let tag = pieces.first, let primary = tag.split(separator: "-").first.map { String($0) },
                languages.contains(where: { $0.code == primary })
            else { continue }
            var weight = 1.0
            for parameter in pieces.dropFirst() where parameter.hasPrefix("q=") { weight = Double(parameter.dropFirst(2)) ?? 0 }
            if weight > 0, weight > (best?.weight ?? 0) { best = (primary, weight) }
        }
        return best?.code ?? "en"
    }

    /// Every word in `language`, English where it has none.
    static func table(_ language: String) -> [String: String] {
        guard case .success(let assets) = WebAssets.shared else { return [:] }
        return assets.texts[language] ?? assets.texts["en"] ?? [:]
    }

    static var english: [String: String] { table("en") }
}
