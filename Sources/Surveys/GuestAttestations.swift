import AttestPlugins
import AttestPostgres
import Foundation
import Identity
import Notifications
import Tenancy

/// A guest's answers (DESIGN §12): the guests' questionnaire (the members' when the campus
/// published none), checked as a member's are and decided by the campus's badge rule with no
/// past; the badge kept with the visit (no answers are kept), and the host told
/// (`guest.arrived`) in the same transaction.
extension AttestationService {
    /// What a guest's submission gave: the badge decided (`created`), or the one the visit
    /// already has (a guest answers once a visit).
    public enum GuestOutcome: Sendable {
        case created(BadgeDecision)
        case alreadySubmitted
    }

    public func submit(
        campus: Campus, guest visit: GuestVisit, surveyVersion: Int, answers raw: [String: JSONValue], guests: GuestStore, at now: Date
    ) async throws -> GuestOutcome {
        guard visit.color == nil else { return .alreadySubmitted }
        let (questionnaire, answers) = try Self.checked(
            raw, version: surveyVersion, against: try await questionnaires.guests(campus: campus.id), campus: campus)
        let date = campus.localDate(at: now), endOfDay = campus.nextWindow(after: now)
        let configured: Result<(id: String, rule: any BadgeRule), any Error>
        do { configured = .success(try await rule(for: campus, questionnaire: questionnaire)) } catch { configured = .failure(error) }
        let input = BadgeRuleInput(
            answers: answers, questionnaire: questionnaire,
            campusSettings: campus.settings.bytes.withUnsafeBytes { try? JSONValue(parsing: $0) } ?? .object([:]),
            history: [], date: date, now: now, endOfDay: endOfDay)
        var (_, _, decision) = await decide(configured, campus: campus, input: input)
        decision.validUntil = min(decision.validUntil, endOfDay)
        // At most 500 code points, as the column holds (a Character may be several).
        decision.reason = String(String.UnicodeScalarView(decision.reason.unicodeScalars.prefix(500)))
        let event: SQL = "'guest.arrived'::text"
        let payload = OutboxEvents.payload(
            event: event, campus: "\(campus.slug)::text", occurredAt: "\(now)::timestamptz", userId: "\(visit.host)::uuid",
            attestationId: "\(visit.id)::uuid", date: "\(date)::date", color: "\(decision.color.rawValue)::text")
        let announce: SQL =
            "WITH events AS (SELECT \(UUID())::uuid AS id, \(event) AS event, \(payload) AS payload) "
            + OutboxEvents.insert(campus: campus.id)
        guard
            try await guests.attest(
                campus: campus.id, visit: visit.id, surveyVersion: questionnaire.version, color: decision.color, reason: decision.reason,
                validUntil: decision.validUntil, now: now, announce: announce)
        else { return .alreadySubmitted }
        writer.outboxSignal?.wake()
        return .created(decision)
    }
}
