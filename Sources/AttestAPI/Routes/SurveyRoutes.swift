import AttestPlugins
import AttestServer
import Foundation
import Hummingbird
import Surveys

/// `GET /v1/campuses/{campus}/survey`: the active questionnaire, in the member's language.
struct SurveyRoutes: Sendable {
    let services: AttestServices

    struct SurveyBody: ResponseEncodable {
        var version: Int
        var title: String
        /// The translation served, or null for the original wording.
        var language: String?
        var questions: [Question]
    }

    func register(on signedIn: RouterGroup<AttestRequestContext>) {
        signedIn.get("survey") { request, context -> Response in
            let campus = try context.requireCampus()
            // A guest answers the guests' questionnaire (the members' when there is none).
            let found =
                context.guest == nil
                ? try await services.questionnaires.active(campus: campus.id)
                : try await services.questionnaires.guests(campus: campus.id)
            guard let active = found else {
                throw Problem.notFound(
                    "\(campus.name) has not published a survey yet; an operator publishes one with `attest survey publish`.")
            }
            let (localized, language) = active.localized(acceptLanguage: request.headers[.acceptLanguage])
            var response = try SurveyBody(
                version: localized.version, title: localized.title, language: language, questions: localized.questions
            )
            .response(from: request, context: context)
            response.headers[.contentLanguage] = language ?? "en"
            response.headers[.vary] = "Accept-Language"
            return response
        }
    }
}
