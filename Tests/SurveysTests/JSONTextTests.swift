import AttestFoundation
import AttestPlugins
import Foundation
import Testing

/// The request-body parser and the answers writer that replaced `JSONDecoder`/`JSONEncoder`
/// on the submission path, checked against Foundation's own JSON.
@Suite struct JSONTextTests {
    static func parse(_ text: String) throws(JSONSyntaxError) -> JSONValue { try JSONValue(parsing: Array(text.utf8)) }

    /// The same value Foundation reads from the text, as a JSONValue.
    static func foundation(_ text: String) throws -> JSONValue {
        try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
    }

    static let valid = [
        #"{}"#, #"[]"#, #"  {"a" : 1 , "b":[true,false,null]}  "#, #"{"n": -0.5e-3, "m": 12E+2, "z": 0, "big": 1.5e300}"#,
        #"{"s": "quote \" backslash \\ slash \/ tab \t nl \n cr \r bs \b ff \f"}"#,
        #"{"u": "caf\u00e9 \u20ac \ud83d\ude00 日本 😀"}"#, #""just a string""#, "-7", "true",
        #"{"nested": {"a": [{"b": [[]]}]}}"#, "{\"t\":\t\r\n1}",
        // Each object gets its own members, however deep: the same key at several levels.
        #"{"a": {"a": 1, "b": {"a": [{"a": 2, "b": 3}, {}, {"c": {}}]}}, "b": {"a": 4}, "c": 5, "d": {}}"#,
        #"{"surveyVersion": 1, "answers": {"q1": false, "q2": false, "q3": true, "q4": false, "q5": false, "q6": false, "q7": false, "#
            + #""q8": false, "q9": false, "q10": false, "q11": false, "q12": false, "q13": false, "temperature": 36.8}}"#,
    ]

    @Test(arguments: valid) func readsWhatFoundationReads(_ text: String) throws {
        #expect(try Self.parse(text) == Self.foundation(text), "\(text)")
    }

    static let invalid = [
        "", " ", "{", "}", #"{"a":}"#, #"{"a" 1}"#, #"{a: 1}"#, #"{"a": 1,}"#, "[1,]", "[1 2]", "01", "1.", ".5", "-", "1e", "+1",
        "tru", "nul", "True", #""unterminated"#, "\"tab\tinside\"", #""\x""#, #""\u12G4""#, #""\ud83d""#, #""\ude00""#,
        #""\ud83d\u0041""#, "1e400", #"{"a": 1} x"#, "[1] [2]", "// comment\n{}", "NaN", "Infinity",
        #"{"dup": 1, "dup": 2}"#, #"[{"a": {"b": 1, "b": 1}}]"#,
    ]

    @Test(arguments: invalid) func refusesWhatIsNotJSON(_ text: String) {
        #expect(throws: JSONSyntaxError.self, "\(text)") { try Self.parse(text) }
    }

    @Test func refusesInvalidUTF8AndDeepNesting() {
        #expect(throws: JSONSyntaxError.self) { try JSONValue(parsing: [0x22, 0xC3, 0x28, 0x22]) }  // "\xC3(" : a broken sequence
        #expect(throws: JSONSyntaxError.self) {
            try JSONValue(parsing: Array(String(repeating: "[", count: 65).utf8) + Array(String(repeating: "]", count: 65).utf8))
        }
        #expect(
            (try? JSONValue(parsing: Array(String(repeating: "[", count: 64).utf8) + Array(String(repeating: "]", count: 64).utf8))) != nil)
    }

    @Test func theErrorSaysWhatAndWhere() {
        #expect(throws: JSONSyntaxError(message: "expected ',' or '}' in an object", offset: 8)) { try Self.parse(#"{"a": 1 "b": 2}"#) }
        // A repeated key is named where it was given again, at its own level only.
        #expect(throws: JSONSyntaxError(message: #"the key "a" repeated"#, offset: 16)) { try Self.parse(#"{"a": {"x": 1}, "a": 2}"#) }
        #expect(throws: JSONSyntaxError(message: #"the key "x" repeated"#, offset: 16)) { try Self.parse(#"[{"a": {"x": 1, "x": 2}}]"#) }
    }

    @Test func answersTextIsWhatJSONDecoderReadsBack() throws {
        let answers: SurveyAnswers = [
            "cough": .bool(true), "fever_chills": .bool(false), "temperature": .number(38.25), "whole": .number(37),
            "tiny": .number(-1e-5), "huge": .number(1.5e20),
            "vaccine": .text("Line \"two\"\n\\ tab\t ctl \u{01} ünïcode 😀"),
        ]
        let text = JSONText.answers(answers)
        #expect(try JSONDecoder().decode(SurveyAnswers.self, from: Data(text.utf8)) == answers)
        #expect(try Self.parse(text) == Self.foundation(text))
        #expect(text.hasPrefix(#"{"cough":true,"fever_chills":false,"huge":1.5e+20,"temperature":38.25,"tiny":-1e-05,"#), "\(text)")
        #expect(JSONText.answers([:]) == "{}")
    }

    /// The byte writer of the hottest responses writes what `JSONText` writes, which
    /// Foundation reads back: every control character, quotes, backslashes, non-ASCII text,
    /// the integers at both ends of `Int` and numbers past 2^53.
    @Test func bytesAreWhatJSONTextWrites() throws {
        let controls = String(decoding: (0..<0x20).map { UInt8($0) }, as: UTF8.self)
        let strings = [
            "", "plain", "quote \" backslash \\ slash /", controls, "ünïcode 😀 日本", "\u{7F}\u{2028}", String(repeating: "a\"", count: 300),
        ]
        for string in strings {
            var expected = ""
            JSONText.appendString(string, to: &expected)
            var json = JSONBytes()
            json.string(string)
            #expect(json.text == expected, "\(string.debugDescription)")
            #expect(try JSONSerialization.jsonObject(with: Data(json.bytes), options: .fragmentsAllowed) as? String == string)
        }
        for integer in [0, 7, -1, 10, 36, 1_000_000, Int.max, Int.min, Int.min + 1] {
            var json = JSONBytes()
            json.integer(integer)
            #expect(json.text == String(integer))
        }
        for number in [0, -0.5, 36.8, 1e300, -1e-5, 9_007_199_254_740_992, 9_007_199_254_740_991, .nan, .infinity, -.infinity, 0.8385] {
            var expected = ""
            JSONText.appendNumber(number, to: &expected)
            var json = JSONBytes()
            json.number(number)
            #expect(json.text == expected, "\(number)")
        }
        var json = JSONBytes(capacity: 0)
        json.literal("[")
        json.bool(true)
        json.literal(",")
        json.bool(false)
        json.literal("]")
        #expect(json.text == "[true,false]")
    }
}
