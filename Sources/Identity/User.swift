import AttestPlugins
import Foundation

/// A person at one campus. The same email at two campuses is two users.
public struct User: Sendable, Codable, Equatable {
    public var id: UserID
    public var campusID: CampusID
    public var email: String
    public var displayName: String
    public var roles: [Role]
    public var createdAt: Date

}

/// Why an identity operation failed; each says how to mend it.
public enum IdentityError: Error, Equatable, CustomStringConvertible {
    case invalidEmail(String)
    case emailDomainNotAllowed(email: String, allowed: [String])
    case userExists(String)
    case userNotFound(String)
    case unknownRole(String)
    case memberRoleIsPermanent
    case invalidDisplayName
    case importFailed(line: Int, reason: String)
    case invalidTTL(String)

    public var description: String {
        switch self {
        case .invalidEmail(let email):
            "invalid email address \"\(email)\": use name@domain, such as alice@example.edu"
        case .emailDomainNotAllowed(let email, let allowed):
            "\(email) is not in this campus's email domains (\(allowed.joined(separator: ", "))): "
                + "use an address there, or add the domain with `attest campus set <campus> email-domains …`"
        case .userExists(let email):
            "a user with email \(email) already exists at this campus"
        case .userNotFound(let email):
            "no user with email \(email) at this campus: add them with `attest user add`, or check `attest user list`"
        case .unknownRole(let role):
            "unknown role \"\(role)\": use one of \(Role.allCases.map(\.rawValue).joined(separator: ", "))"
        case .memberRoleIsPermanent:
            "every user is a member; the member role cannot be granted or revoked"
        case .invalidDisplayName:
            "the display name must be at most 200 characters, without control characters (line breaks, tabs, NUL)"
        case .importFailed(let line, let reason):
            "line \(line): \(reason); nothing was imported"
        case .invalidTTL(let text):
            "invalid --ttl \"\(text)\": use a duration such as 90m, 12h or 30d (at most 366d)"
        }
    }
}
