import Foundation

/// Identifies a campus (a tenant). Every tenant-owned row carries one.
public struct CampusID: Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: UUID
    public init(_ rawValue: UUID) { self.rawValue = rawValue }
    public init(from decoder: any Decoder) throws { rawValue = try UUID(from: decoder) }
    public func encode(to encoder: any Encoder) throws { try rawValue.encode(to: encoder) }
    public var description: String { rawValue.uuidString.lowercased() }
}

/// Identifies a user within one campus: the same person at two campuses is two users.
public struct UserID: Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: UUID
    public init(_ rawValue: UUID) { self.rawValue = rawValue }
    public init(from decoder: any Decoder) throws { rawValue = try UUID(from: decoder) }
    public func encode(to encoder: any Encoder) throws { try rawValue.encode(to: encoder) }
    public var description: String { rawValue.uuidString.lowercased() }
}
