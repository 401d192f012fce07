import AttestPlugins
import AttestPostgres
import Foundation

/// A campus: one tenant, with its time zone and daily deadline.
public struct Campus: Sendable, Codable, Equatable {
    public var id: CampusID
    public var slug: String
    public var name: String
    /// IANA time zone; "today" is the date here.
    public var timeZone: String
    /// Minutes after local midnight before which an attestation is on time.
    public var deadlineMinute: Int
    public var reminderMinute: Int
    public var emailDomains: [String]
    public var sessionLifetimeSeconds: Int
    public var retentionDays: Int
    public var createdAt: Date
}

/// What `CampusStore.create` needs; the rest takes the schema's defaults.
public struct NewCampus: Sendable {
    public var slug: String
    public var name: String
    public var timeZone: String
    public var deadlineMinute: Int
    public var emailDomains: [String]

    public init(slug: String, name: String, timeZone: String, deadlineMinute: Int = 600, emailDomains: [String] = []) {
        self.slug = slug
        self.name = name
        self.timeZone = timeZone
        self.deadlineMinute = deadlineMinute
        self.emailDomains = emailDomains
    }
}

/// Why a campus could not be created or found; each says how to mend it.
public enum CampusError: Error, Equatable, CustomStringConvertible {
    case invalidSlug(String)
    case unknownTimeZone(String)
    case invalidDeadline(Int)
    case invalidName
    case duplicateSlug(String)
    case notFound(String)

    public var description: String {
        switch self {
        case .invalidSlug(let slug):
            "invalid campus slug \"\(slug)\": use 2 to 40 characters of a-z, 0-9 and '-', not starting or ending with '-'"
        case .unknownTimeZone(let zone):
            "unknown time zone \"\(zone)\": use an IANA name such as America/New_York or Europe/Berlin"
        case .invalidDeadline(let minute):
            "invalid deadline minute \(minute): use a local time from 00:00 to 23:59"
        case .invalidName:
            "the campus name must be 1 to 200 characters"
        case .duplicateSlug(let slug):
            "a campus with slug \"\(slug)\" already exists: choose another slug or use `attest campus set`"
        case .notFound(let slug):
            "no campus with slug \"\(slug)\": `attest campus list` shows the campuses"
        }
    }
}

extension CampusID: PostgresCodable {
    public static var postgresType: PostgresType { .uuid }
    public func encode(into buffer: inout [UInt8]) throws { try rawValue.encode(into: &buffer) }
    public static func decode(from bytes: UnsafeRawBufferPointer, type: PostgresType) throws -> CampusID {
        CampusID(try UUID.decode(from: bytes, type: type))
    }
}
