import AttestPlugins

/// Why a use case of Records (results, isolations) could not do what was asked: the module's
/// one error vocabulary. Each description says what went wrong and how to mend it.
public enum RecordsError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What was sent cannot be read; every problem, by the element or field it concerns
    /// (`Observation.code`, `Bundle.entry[2].resource.issued`, `line 4: collected_at`).
    case invalid([Problem])
    /// No such result, exemption or isolation at this campus.
    case notFound(String)
    /// No member of this campus has this email (a result matched or an isolation started by hand).
    case noMember(email: String)
    /// The request conflicts with the record as it is (a result already matched).
    case conflict(String)
    /// The server holds no key-encryption key, so exemptions' notes can be neither sealed nor opened.
    case sealingUnavailable

    /// One thing wrong with what was sent.
    public struct Problem: Sendable, Equatable, CustomStringConvertible {
        public var field: String
        public var message: String
        public init(_ field: String, _ message: String) { (self.field, self.message) = (field, message) }
        public var description: String { "\(field): \(message)" }
    }

    public var description: String {
        switch self {
        case .invalid(let problems): problems.prefix(20).map(\.description).joined(separator: "; ")
        case .notFound(let what): what
        case .noMember(let email): "no member of this campus has the email \(email): check it, or add them with `attest user add`"
        case .conflict(let what): what
        case .sealingUnavailable:
            "exemptions cannot be kept or read on this server: it was started without a key-encryption key (--kek-file)"
        }
    }
}
