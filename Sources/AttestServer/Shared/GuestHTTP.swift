import AttestPlugins
import Foundation
import Identity
import Notifications
import Surveys
import Tenancy

/// The guests' use cases as the API and the pages run them (DESIGN §12): a visit registered
/// and its code sent, a kiosk's visit vouched for, the guest's answers, the guest's badge.
package enum GuestHTTP {
    /// Registers a visit from `address` and emails its code (in `language`: `es`, else English); the visit is forgotten when the code
    /// cannot be sent (503 saying why, with `Retry-After` when trying again may help).
    package static func register(
        campus: Campus, name: String, email: String, host: String, address: String?, language: String, services: AttestServices
    ) async throws -> Registration {
        try services.limiters.admitGuestVisit(address: address)
        let registration = try await services.guests.register(campus: campus, name: name, email: email, host: host, now: services.clock())
        guard let code = registration.code else { throw Problem.internalError }
        let visit = registration.visit
        let erase = "\(services.origin)/c/\(campus.slug)/visit/erase?visit=\(visit.id.lowercasedText)&token=\(registration.eraseToken)"
        do {
            _ = try await services.outbox.sendGuestCode(
                campus: campus, name: visit.name, address: visit.email, code: code, host: visit.hostName, eraseLink: erase,
                language: language)
        } catch let failure as GuestCodeFailure {
            try await services.guests.discard(campus: campus.id, visit: visit.id)
            throw Problem(
                .serviceUnavailable, slug: codeNotSent, title: "The code could not be sent",
                detail: "Your code could not be sent (\(failure.description)). "
                    + (failure.transient
                        ? "Try again in a minute, or ask the front desk." : "Ask the front desk to register you at the kiosk."),
                headers: failure.transient ? [.retryAfter: "60"] : [:])
        }
        return registration
    }

    package typealias Registration = GuestStore.Registration

    /// The problem's slug when a visit's code could not be sent.
    package static let codeNotSent = "code-not-sent"

    /// A guest's badge now: what the guest survey gave, gray before it is answered.
    package static func badge(_ visit: GuestVisit, campus: Campus, services: AttestServices) async throws -> Badge {
        let answered = visit.color.flatMap { color in
            visit.validUntil.map { (color: color, reason: visit.reason ?? "", validUntil: $0) }
        }
        return try await services.badges.guest(
            campus: campus, visit: visit.id, host: visit.hostName, answered: answered, now: services.clock())
    }

    /// Submits a guest's answers: the visit with its badge, or `nil` when it had one already.
    package static func submit(
        _ visit: GuestVisit, campus: Campus, surveyVersion: Int, answers: [String: JSONValue], services: AttestServices
    ) async throws -> GuestVisit? {
        switch try await services.attestations.submit(
            campus: campus, guest: visit, surveyVersion: surveyVersion, answers: answers, guests: services.guests, at: services.clock())
        {
        case .created(let decision):
            var answered = visit
            (answered.color, answered.reason, answered.validUntil) = (decision.color, decision.reason, decision.validUntil)
            return answered
        case .alreadySubmitted: return nil
        }
    }
}
