import AttestPlugins
import AttestPostgres
import Foundation
import Testing

@testable import Surveys

/// Stored answers are read with the project's JSON parser, not `JSONDecoder`; both must read
/// the same answers from what PostgreSQL gives back for a `jsonb` column.
@Suite struct StoredAnswersTests {
    static let stored = [
        #"{}"#,
        #"{"cough": false, "fever_chills": true, "temperature": 36.8}"#,
        #"{"temperature": -1.5e1, "count": 0, "big": 12E+2}"#,
        #"{"vaccine": "mrna", "note": "caf\u00e9 \"quoted\" 😀 日本", "empty": ""}"#,
    ]

    @Test(arguments: stored) func readsWhatJSONDecoderReads(_ text: String) throws {
        let json = PostgresJSON(text)
        #expect(try AttestationService.storedAnswers(json) == json.decode(as: SurveyAnswers.self), "\(text)")
    }

    static let notAnswers = [#"[]"#, #""text""#, #"{"a": null}"#, #"{"a": [true]}"#, #"{"a": {"b": 1}}"#, #"{"a": 1"#]

    @Test(arguments: notAnswers) func refusesWhatIsNotAnObjectOfAnswers(_ text: String) {
        #expect(throws: (any Error).self, "\(text)") { try AttestationService.storedAnswers(PostgresJSON(text)) }
        #expect(throws: (any Error).self, "\(text)") { try PostgresJSON(text).decode(as: SurveyAnswers.self) }
    }
}
