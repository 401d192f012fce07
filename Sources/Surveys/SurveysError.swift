import AttestPlugins

/// Why a use case of Surveys (submitting, badges, questionnaires, statistics)
/// could not do what was asked: the module's one error vocabulary. Each description says
/// what went wrong and how to mend it; the HTTP layer maps each case to one response.
public enum SurveysError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The campus has no questionnaire yet.
    case noSurvey(campus: String)
    /// The answers name another version than the active one.
    case surveyChanged(active: Int, given: Int)
    /// The answers do not fit the questionnaire; every problem, by `answers.<id>`.
    case invalidAnswers([FieldProblem])
    /// A questionnaire that cannot be published; every problem, by its place.
    case invalidQuestionnaire([FieldProblem])
    /// A date range (`from`, `to`) that cannot be read; every problem, by field.
    case invalidRange([FieldProblem])
    /// The signed-in member no longer exists (deleted since a server cached the session).
    case unknownUser
    /// The campus has no current badge-signing key.
    case noSigningKey(campus: String)

    public var description: String {
        switch self {
        case .noSurvey(let campus): "\(campus) has not published a survey yet, so there is nothing to answer"
        case .surveyChanged(let active, let given):
            "the active survey is version \(active), not \(given): load it again (GET …/survey) and answer that one"
        case .invalidAnswers(let problems): problems.map(\.description).joined(separator: "; ")
        case .invalidQuestionnaire(let problems):
            "the questionnaire cannot be published: " + problems.map(\.description).joined(separator: "; ")
        case .invalidRange(let problems): problems.map(\.description).joined(separator: "; ")
        case .unknownUser: "the signed-in user no longer exists at this campus"
        case .noSigningKey(let campus): "campus \(campus) has no badge-signing key: run `attest campus rotate-badge-key \(campus)`"
        }
    }
}
