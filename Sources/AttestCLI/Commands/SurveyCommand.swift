import ArgumentParser
import AttestPlugins
import Foundation
import Surveys
import Tenancy

struct SurveyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "survey", abstract: "Publish and show a campus's versioned questionnaire.",
        subcommands: [Publish.self, Show.self])
}

extension SurveyCommand {
    struct Publish: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check a questionnaire (JSON) and make it the active version.",
            discussion: """
                The file holds {"title", "titleTranslations"?, "questions": [...]}; a question has id \
                ([a-z0-9_]), kind (boolean, number, choice, text), prompt, and optionally required \
                (default true), translations {"es": "…"}, symptom (boolean questions), min/max/unit \
                (number), options (choice), maxLength (text); any other member is refused. `attest survey show \
                demo --json` prints an example, which may be published again as it is. \
                With --guest FILE it is the questionnaire the campus's guests answer (DESIGN §12; without one \
                they answer the members').
                """)
        @Argument var campus: String
        @Argument(help: "The questionnaire JSON file.") var file: String?
        @Flag(help: "Publish the built-in demo questionnaire (the common symptom list, English and Spanish) instead of a file.")
        var demo = false
        @Option(name: .customLong("guest"), help: "Publish this questionnaire JSON file as the one guests answer.")
        var guestFile: String?
        @Flag(help: "Print the published questionnaire as JSON.") var json = false
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var logging: LoggingOptions

        func validate() throws {
            guard [file != nil, demo, guestFile != nil].filter({ $0 }).count == 1 else {
                throw ValidationError("give one of: a questionnaire JSON file, --demo, or --guest FILE")
            }
        }

        func run() async throws {
            var draft = DemoQuestionnaire.draft
            if let file = file ?? guestFile {
                draft = try QuestionnaireRules.parse(try readTextFile(file, "the path of a questionnaire JSON file"))
            }
            let published = try await TenantContext.run(database: database, logging: logging) { context in
                let campus = try await context.campuses.require(slug: campus)
                return try await QuestionnaireStore(client: context.client).publish(
                    campus: campus, draft: draft, actor: TenantContext.actor, audience: guestFile == nil ? .member : .guest)
            }
            if json {
                printJSON(published)
            } else {
                say(
                    "Published version \(published.version) of \(campus)'s \(guestFile == nil ? "" : "guest ")survey (\(published.questions.count) question\(published.questions.count == 1 ? "" : "s"))."
                )
            }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show the active questionnaire (or another version).")
        @Argument var campus: String
        @Option(help: "A version other than the active one.") var version: Int?
        @Flag(help: "Print JSON.") var json = false
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var logging: LoggingOptions

        func run() async throws {
            let questionnaire = try await TenantContext.run(database: database, logging: logging) { context -> Questionnaire? in
                let campus = try await context.campuses.require(slug: campus)
                let store = QuestionnaireStore(client: context.client)
                if let version { return try await store.version(version, campus: campus.id) }
                return try await store.active(campus: campus.id)
            }
            guard let questionnaire else {
                if let version {
                    throw CLIError("\(campus) has no survey version \(version): `attest survey show \(campus)` shows the active one")
                }
                throw CLIError("\(campus) has no survey yet: publish one with `attest survey publish \(campus) FILE.json`")
            }
            if json { return printJSON(questionnaire) }
            say("\(questionnaire.title) — version \(questionnaire.version)")
            for question in questionnaire.questions {
                var detail = question.kind.rawValue
                if let options = question.options { detail += " [\(options.joined(separator: ", "))]" }
                if question.min != nil || question.max != nil {
                    detail += " \(question.min.map { "\($0)" } ?? "")…\(question.max.map { "\($0)" } ?? "") \(question.unit ?? "")"
                }
                say("  \(question.id)\(question.required ? "" : " (optional)"): \(question.prompt) — \(detail)")
            }
        }
    }
}
