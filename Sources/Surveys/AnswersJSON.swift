import AttestFoundation
import AttestPlugins

extension JSONText {
    /// Answers as a JSON object, keys sorted: what `JSONEncoder` gives, without its cost.
    public static func answers(_ answers: SurveyAnswers) -> String {
        var output = "{"
        for (offset, (key, value)) in answers.sorted(by: { $0.key < $1.key }).enumerated() {
            if offset > 0 { output.append(",") }
            appendMember(key, value, to: &output)
        }
        output.append("}")
        return output
    }

    /// `"key":value`, one member of an answers object.
    public static func appendMember(_ key: String, _ value: AnswerValue, to output: inout String) {
        appendString(key, to: &output)
        output.append(":")
        switch value {
        case .bool(let flag): output.append(flag ? "true" : "false")
        case .number(let number): appendNumber(number, to: &output)
        case .text(let text): appendString(text, to: &output)
        }
    }
}
