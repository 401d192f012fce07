import Hummingbird
import Identity
import Journal
import Records
import Surveys
import Tenancy

/// The one mapping of the core modules' errors to responses: a route lets them pass, and
/// `ProblemMiddleware` turns each into its problem here.
extension Problem {
    /// Surveys' errors: what a submission, a badge or a statistics request can meet.
    package init(_ error: SurveysError) {
        switch error {
        case .noSurvey:
            self.init(.conflict, slug: "no-survey", title: "No survey yet", detail: Self.sentence(error))
        case .surveyChanged:
            self.init(.conflict, slug: "survey-version", title: "Survey changed", detail: Self.sentence(error))
        case .invalidAnswers(let problems), .invalidQuestionnaire(let problems), .invalidRange(let problems):
            self = .validation(problems.map { .init(field: $0.field, message: $0.message) })
        case .unknownUser:
            // Deleted since this server cached the session (for at most a few seconds).
            self = .unauthorized(
                "The signed-in member no longer exists at this campus: sign in again, or ask a campus administrator.",
                error: "invalid_token")
        case .noSigningKey:
            self.init(.serviceUnavailable, slug: "badge-unavailable", title: "Badge unavailable", detail: Self.sentence(error))
        }
    }

    /// Identity's errors: sign-in refusals are 401 (503 while the issuer's keys cannot be
    /// fetched); an operator's request's errors do not reach the API but map sensibly.
    package init(_ error: IdentityError) {
        switch error {
        case .keysUnavailable, .providerFailed:
            self.init(
                .serviceUnavailable, slug: "identity-provider-unavailable", title: "Identity provider unavailable",
                detail: Self.sentence(error), headers: [.retryAfter: "5"])
        case .noIssuer:
            self = .unauthorized(Self.sentence(error), error: "invalid_token")
        case _ where error.refusesSignIn:
            self = .unauthorized("Sign-in refused: \(error).", error: "invalid_token")
        case .userExists, .memberIDTaken:
            self.init(.conflict, slug: "conflict", title: "Conflict", detail: Self.sentence(error))
        case .userNotFound, .notConfigured, .noWebClient:
            self = .notFound(Self.sentence(error))
        default:
            self.init(.unprocessableContent, slug: "validation", title: "Invalid request", detail: Self.sentence(error))
        }
    }

    /// A visitor's refusals (DESIGN §12): each says what to do.
    package init(_ error: GuestError) {
        let detail = Self.sentence(error)
        switch error {
        case .closed: self.init(.notFound, slug: "guests-closed", title: "This campus takes no guests online", detail: detail)
        case .invalid(let problems): self = .validation(problems.map { .init(field: $0.field, message: $0.message) })
        case .hostNotFound, .hostAmbiguous: self = .validation([.init(field: "host", message: detail)])
        case .dailyCapReached:
            self.init(.tooManyRequests, slug: "guest-cap", title: "No more guests today", detail: detail)
        case .tooManyForEmail:
            self.init(.tooManyRequests, slug: "guest-email-limit", title: "Too many visits for this address", detail: detail)
        case .unknownVisit: self = .notFound(detail)
        case .alreadyVerified: self.init(.conflict, slug: "visit-verified", title: "Code already used", detail: detail)
        case .locked: self.init(.forbidden, slug: "visit-locked", title: "Visit locked", detail: detail)
        case .codeExpired: self.init(.gone, slug: "code-expired", title: "Code expired", detail: detail)
        case .wrongCode: self = .validation([.init(field: "code", message: error.description)])
        }
    }

    /// Tenancy's errors.
    package init(_ error: CampusError) {
        switch error {
        case .notFound: self = .notFound(Self.sentence(error))
        case .duplicateSlug: self.init(.conflict, slug: "conflict", title: "Conflict", detail: Self.sentence(error))
        case .noKeyEncryptionKey, .otherKeyEncryptionKey, .sealedSecretDamaged:
            self.init(.serviceUnavailable, slug: "keys-unavailable", title: "Keys unavailable", detail: Self.sentence(error))
        default: self.init(.unprocessableContent, slug: "validation", title: "Invalid request", detail: Self.sentence(error))
        }
    }

    /// Journal's errors.
    package init(_ error: JournalError) {
        let detail = Problem.sentence(error)
        switch error {
        case .notFound: self.init(.notFound, slug: "not-found", title: "Not found", detail: detail)
        case .sealingUnavailable: self.init(.serviceUnavailable, slug: "journal-unavailable", title: "Journal unavailable", detail: detail)
        case .invalid(let problems):
            self = .validation(problems.sorted { $0.key < $1.key }.map { .init(field: $0.key, message: $0.value) })
        }
    }

    /// Records' errors: what is wrong with a result, a bundle, a file or a request about them.
    package init(_ error: RecordsError) {
        let detail = Problem.sentence(error)
        switch error {
        case .invalid(let problems): self = .validation(problems.map { .init(field: $0.field, message: $0.message) })
        case .notFound, .noMember: self.init(.notFound, slug: "not-found", title: "Not found", detail: detail)
        case .conflict: self.init(.conflict, slug: "conflict", title: "Conflict", detail: detail)
        case .sealingUnavailable: self.init(.serviceUnavailable, slug: "records-unavailable", title: "Records unavailable", detail: detail)
        }
    }

    /// Why a SMART Health Card was refused: 422, its type `…/problems/shc-<refusal>`.
    package init(_ refused: SmartHealthCards.Refused) {
        let title =
            switch refused.refusal {
            case .notACard: "Not a SMART Health Card"
            case .unknownIssuer: "Issuer not trusted"
            case .badSignature: "Signature does not verify"
            case .notYetValid: "Card not yet valid"
            case .revoked: "Card revoked"
            case .anotherPerson: "Card of another person"
            case .noVaccination: "No vaccination on the card"
            }
        self.init(.unprocessableContent, slug: "shc-" + refused.refusal.rawValue, title: title, detail: Problem.sentence(refused.detail))
    }

    /// The episodes' errors.
    package init(_ error: EpisodeError) {
        let detail = Problem.sentence(error)
        switch error {
        case .notFound: self.init(.notFound, slug: "not-found", title: "Not found", detail: detail)
        case .alreadyOpen: self.init(.conflict, slug: "episode-open", title: "Episode already open", detail: detail)
        case .alreadyStopped: self.init(.conflict, slug: "episode-stopped", title: "Episode already stopped", detail: detail)
        }
    }

    /// A member's quota: 413 for the bytes of recordings, 429 for what is counted.
    package init(_ exceeded: MemberQuotas.Exceeded) {
        let detail = Problem.sentence(exceeded)
        switch exceeded {
        case .recordingBytes:
            self.init(.contentTooLarge, slug: "recording-quota", title: "Recordings take too much room", detail: detail)
        case .entriesPerDay, .episodesPerDay, .openLinks:
            self.init(.tooManyRequests, slug: "quota-exceeded", title: "Over a quota", detail: detail)
        }
    }

    /// An error's description as a sentence: capitalised, with a full stop.
    package static func sentence(_ error: some CustomStringConvertible) -> String {
        let text = error.description
        guard let first = text.first else { return text }
        return first.uppercased() + text.dropFirst() + (text.hasSuffix(".") ? "" : ".")
    }
}
