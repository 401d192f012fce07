import AttestPlugins
import AttestPostgres
import Foundation

/// A campus: one tenant, with its time zone, daily deadline and sign-in rules.
public struct Campus: Sendable, Equatable {
    public var id: CampusID
    public var slug: String
    public var name: String
    /// IANA time zone; "today" is the date here.
    public var timeZone: String
    /// Minutes after local midnight before which an attestation is on time.
    public var deadlineMinute: Int
    /// Minutes after local midnight when members who have not attested are reminded.
    public var reminderMinute: Int
    /// Email domains whose members may sign in; empty admits nobody but through an OIDC issuer
    /// added with `allowAnyDomain`.
    public var emailDomains: [String]
    public var sessionLifetimeSeconds: Int
    public var retentionDays: Int
    /// Counts below this are suppressed in member-visible statistics.
    public var statsMinCount: Int
    /// Free-form settings (JSON object) read by plugins.
    public var settings: PostgresJSON
    public var createdAt: Date
    /// The region whose community figures members see (`attest campus set <slug> region <id>`).
    public var communityRegion: String? = nil

    /// The campus's zone (validated when the campus was created or changed).
    public var zone: TimeZone { TimeZone(identifier: timeZone) ?? .gmt }

    /// The first instant of a campus-local date (DST-correct).
    public func startOfDay(_ date: LocalDate) -> Date { date.start(in: zone) }

    /// The campus-local calendar date at `instant`.
    public func localDate(at instant: Date) -> LocalDate { LocalDate(instant, in: zone) }
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

/// Why a campus could not be created, changed or found; each says how to mend it.
public enum CampusError: Error, Equatable, CustomStringConvertible {
    /// Secrets are needed and no key-encryption key was given.
    case noKeyEncryptionKey
    /// The campus's secrets are sealed under another key-encryption key.
    case otherKeyEncryptionKey(sealedWith: String, given: String)
    /// A sealed secret does not open: altered, or copied from another campus or key.
    case sealedSecretDamaged
    case invalidSlug(String)
    case unknownTimeZone(String)
    case invalidTime(key: String, value: String)
    case invalidName
    case invalidEmailDomain(String)
    case duplicateSlug(String)
    case notFound(String)
    case unknownSetting(key: String)
    case invalidSetting(key: String, value: String, expected: String)

    public var description: String {
        switch self {
        case .noKeyEncryptionKey:
            "no key-encryption key: make one with `attest keys new-kek > FILE` (then chmod 600 FILE) and pass --kek-file FILE or set ATTEST_KEK_FILE"
        case .otherKeyEncryptionKey(let sealedWith, let given):
            "the campus's secrets are sealed under key-encryption key \(sealedWith), not the one given (\(given)): pass that key, or re-wrap with `attest keys rotate-kek`"
        case .sealedSecretDamaged: "a sealed secret does not open: it was altered, or belongs to another campus"
        case .invalidSlug(let slug):
            "invalid campus slug \"\(slug)\": use 2 to 40 characters of a-z, 0-9 and '-', not starting or ending with '-'"
        case .unknownTimeZone(let zone):
            "unknown time zone \"\(zone)\": use an IANA name such as America/New_York or Europe/Berlin"
        case .invalidTime(let key, let value):
            "invalid \(key) \"\(value)\": use a local time HH:MM from 00:00 to 23:59"
        case .invalidName:
            "the campus name must be 1 to 200 characters on one line (no line breaks, tabs or other control characters), not only spaces"
        case .invalidEmailDomain(let domain):
            "invalid email domain \"\(domain)\": use a domain such as example.edu"
        case .duplicateSlug(let slug):
            "a campus with slug \"\(slug)\" already exists: choose another slug, or change it with `attest campus set`"
        case .notFound(let slug):
            "no campus with slug \"\(slug)\": `attest campus list` shows the campuses"
        case .unknownSetting(let key):
            "unknown campus setting \"\(key)\": use one of \(CampusSetting.allCases.map(\.rawValue).joined(separator: ", "))"
        case .invalidSetting(let key, let value, let expected):
            "invalid value \"\(value)\" for \(key): expected \(expected)"
        }
    }
}

/// The keys `attest campus set` accepts.
public enum CampusSetting: String, CaseIterable, Sendable {
    case name, timezone, deadline, reminder
    case emailDomains = "email-domains"
    case sessionLifetime = "session-lifetime"
    case retentionDays = "retention-days"
    case statsMinCount = "stats-min-count"
    case settings
    /// The home region of community data: an id of the campus's provider, `none` to clear.
    case region
    /// What a directory's SCIM DELETE does: `deactivate` (the default) or `erase`.
    case scimDelete = "scim-delete"
    /// Who may sign in: `open` (anyone the issuers admit; the default) or `scim-only` (users the directory provisioned).
    case provisioning
    /// The ID token claim naming the user's groups (`groups` by default).
    case groupsClaim = "groups-claim"
    /// Whether visitors may register at `/c/{campus}/visit`: `on` or `off` (the default).
    case guests
    /// How many visits a campus-local day takes (200 by default; 0 closes registration for the day).
    case guestDailyCap = "guest-daily-cap"
    /// How many days after its day a visit is kept (14 by default).
    case guestRetentionDays = "guest-retention-days"
    /// Whom a visitor turned away should contact (the front desk's name and number).
    case guestContact = "guest-contact"
}

extension CampusID: PostgresCodable {
    public static var postgresType: PostgresType { .uuid }
    public func encode(into buffer: inout [UInt8]) throws { rawValue.encode(into: &buffer) }
    public static func decode(from bytes: UnsafeRawBufferPointer, type: PostgresType) throws -> CampusID {
        CampusID(try UUID.decode(from: bytes, type: type))
    }
}

extension LocalDate: PostgresCodable {
    public static var postgresType: PostgresType { .date }
    public func encode(into buffer: inout [UInt8]) throws {
        guard let date = PostgresDate(year: year, month: month, day: day) else {
            throw PostgresError(code: .encoding, message: "\(self) is not a calendar date")
        }
        try date.encode(into: &buffer)
    }
    public static func decode(from bytes: UnsafeRawBufferPointer, type: PostgresType) throws -> LocalDate {
        let date = try PostgresDate.decode(from: bytes, type: type)
        return LocalDate(year: date.year, month: date.month, day: date.day)
    }
}

extension UserID: PostgresCodable {
    public static var postgresType: PostgresType { .uuid }
    public func encode(into buffer: inout [UInt8]) throws { rawValue.encode(into: &buffer) }
    public static func decode(from bytes: UnsafeRawBufferPointer, type: PostgresType) throws -> UserID {
        UserID(try UUID.decode(from: bytes, type: type))
    }
}

/// Parsing of the small formats operators type.
public enum CampusFormats {
    /// "HH:MM" → minutes after midnight.
    public static func minute(fromClock text: String) -> Int? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].count == 2, parts[1].count == 2,
            let hours = Int(parts[0]), let minutes = Int(parts[1]), (0..<24).contains(hours), (0..<60).contains(minutes)
        else { return nil }
        return hours * 60 + minutes
    }

    /// Minutes after midnight → "HH:MM".
    public static func clock(fromMinute minute: Int) -> String {
        let hours = minute / 60, minutes = minute % 60
        return (hours < 10 ? "0" : "") + "\(hours):" + (minutes < 10 ? "0" : "") + "\(minutes)"
    }

    /// "90s", "15m", "12h", "30d" → seconds.
    public static func seconds(fromDuration text: String) -> Int? {
        guard let unit = text.last, let value = Int(text.dropLast()), value > 0 else { return nil }
        let multiplier: Int
        switch unit {
        case "s": multiplier = 1
        case "m": multiplier = 60
        case "h": multiplier = 3600
        case "d": multiplier = 86400
        default: return nil
        }
        let (seconds, overflow) = value.multipliedReportingOverflow(by: multiplier)
        return overflow || seconds > 366 * 86400 ? nil : seconds
    }

    /// Seconds → the largest whole unit ("30d", "12h", …).
    public static func duration(fromSeconds seconds: Int) -> String {
        if seconds % 86400 == 0 { return "\(seconds / 86400)d" }
        if seconds % 3600 == 0 { return "\(seconds / 3600)h" }
        if seconds % 60 == 0 { return "\(seconds / 60)m" }
        return "\(seconds)s"
    }

    /// A lower-case DNS name with at least one dot.
    public static func isEmailDomain(_ text: String) -> Bool {
        let labels = text.split(separator: ".", omittingEmptySubsequences: false)
        return labels.count >= 2 && text.utf8.count <= 253
            && labels.allSatisfy { label in
                !label.isEmpty && label.utf8.count <= 63 && label.first != "-" && label.last != "-"
                    && label.utf8.allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2D }
            }
    }
}
