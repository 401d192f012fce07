import Foundation

/// The kinds of event the platform announces to notification sinks.
public enum NotificationEvent: String, Sendable, Codable, CaseIterable {
    /// A member submitted today's attestation.
    case attestationSubmitted = "attestation.submitted"
    /// …after the campus's daily deadline.
    case attestationLate = "attestation.late"
    /// The badge decided was red.
    case badgeRed = "badge.red"
    /// A member has not attested by the campus's reminder time.
    case reminderDue = "reminder.due"
    /// A guest checked in (answered the guest survey): `userId` is their host, `attestationId`
    /// the visit, `color` the guest's badge.
    case guestArrived = "guest.arrived"
}

/// One event, as a sink receives it. It carries ids, colour, date and links, never survey
/// answers, names or email addresses: a sink that needs a person looks them up with the
/// ids through the API, where the read is authorised and audited.
public struct AttestNotification: Sendable, Codable, Equatable {
    /// Unique per event (a lowercase UUID); the same for every sink and every retry (use it
    /// to de-duplicate).
    public var id: String
    public var event: NotificationEvent
    /// The campus slug.
    public var campus: String
    /// ISO 8601.
    public var occurredAt: String
    public var userId: String?
    public var attestationId: String?
    /// The campus-local date, `yyyy-mm-dd`.
    public var date: String?
    public var color: BadgeColor?
    public var onTime: Bool?
    /// API paths (relative to the server) where the authorised can read more.
    public var links: [String: String]

    public init(
        id: UUID = UUID(), event: NotificationEvent, campus: String, occurredAt: Date, userId: UserID? = nil,
        attestationId: UUID? = nil, date: LocalDate? = nil, color: BadgeColor? = nil, onTime: Bool? = nil,
        links: [String: String] = [:]
    ) {
        self.id = id.lowercasedText
        self.event = event
        self.campus = campus
        self.occurredAt = occurredAt.ISO8601Format()
        self.userId = userId?.description
        self.attestationId = attestationId?.lowercasedText
        self.date = date?.description
        self.color = color
        self.onTime = onTime
        self.links = links
    }
}
