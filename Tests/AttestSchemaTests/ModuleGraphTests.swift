import Foundation
import Testing

/// The module graph as docs/architecture.md draws it, read from the sources' imports: the two
/// front ends never import each other, the core never imports the server or a front end, and
/// plugins see the plugin API only.
@Suite("Module graph")
struct ModuleGraphTests {
    static let core = ["Tenancy", "Community", "Identity", "Surveys", "Journal", "Notifications"]
    static let server = ["AttestServer", "AttestAPI", "AttestWeb", "AttestCLI"]

    /// Who may not import whom: each module of the left, none of the right.
    static let forbidden: [(modules: [String], imports: [String])] = [
        (["AttestAPI"], ["AttestWeb"]),
        (["AttestWeb"], ["AttestAPI"]),
        (["AttestServer"], ["AttestAPI", "AttestWeb", "AttestCLI"]),
        (core, server),
        (["AttestPlugins", "AttestFoundation", "AttestPostgres"], core + server),
        (["BuiltinPlugins"], core + server + ["AttestPostgres"]),
    ]

    @Test func frontEndsStandApartAndTheCoreImportsNeither() throws {
        let sources = TableOwnershipTests.root.appending(path: "Sources")
        let files = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil))
        var imports: [String: Set<String>] = [:]
        for case let file as URL in files where file.pathExtension == "swift" {
            let relative = String(file.path.dropFirst(sources.path.count + 1))
            let module = String(relative.prefix { $0 != "/" })
            for line in try String(contentsOf: file, encoding: .utf8).split(separator: "\n") {
                let words = line.split(separator: " ")
                if let index = words.firstIndex(of: "import"), index + 1 < words.count,
                    words[..<index].allSatisfy({ ["@testable", "internal", "package", "public", "@_exported"].contains($0) })
                {
                    imports[module, default: []].insert(String(words[index + 1]))
                }
            }
        }
        #expect(imports["AttestAPI"]?.contains("AttestServer") == true && imports["AttestWeb"]?.contains("AttestServer") == true)
        var found: [String] = []
        for rule in Self.forbidden {
            for module in rule.modules {
                #expect(imports[module] != nil, "no sources read for \(module)")
                for name in rule.imports where imports[module]?.contains(name) == true { found.append("\(module) imports \(name)") }
            }
        }
        #expect(found.isEmpty, "\(found.sorted())")
    }
}
