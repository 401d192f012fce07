import Foundation

/// Identifies a campus (a tenant). Every tenant-owned row carries one.
public struct CampusID: Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: UUID
    public init(_ rawValue: UUID) { self.rawValue = rawValue }
    public init(from decoder: any Decoder) throws { rawValue = try UUID(from: decoder) }
    public func encode(to encoder: any Encoder) throws { try rawValue.encode(to: encoder) }
    public var description: String { rawValue.lowercasedText }
}

/// Identifies a user within one campus: the same person at two campuses is two users.
public struct UserID: Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: UUID
    public init(_ rawValue: UUID) { self.rawValue = rawValue }
    public init(from decoder: any Decoder) throws { rawValue = try UUID(from: decoder) }
    public func encode(to encoder: any Encoder) throws { try rawValue.encode(to: encoder) }
    public var description: String { rawValue.lowercasedText }
}

extension UUID {
    /// The canonical text in lowercase (`01a1f95d-3e40-7…`), as PostgreSQL and the API write
    /// ids: `lowercasedText` without its two strings (every submission writes one).
    public var lowercasedText: String {
        withUnsafeBytes(of: uuid) { bytes in
            String(unsafeUninitializedCapacity: 36) { text in
                let digits: StaticString = "0123456789abcdef"
                var at = 0
                for (index, byte) in bytes.enumerated() {
                    if index == 4 || index == 6 || index == 8 || index == 10 {
                        text[at] = UInt8(ascii: "-")
                        at += 1
                    }
                    text[at] = digits.utf8Start[Int(byte >> 4)]
                    text[at + 1] = digits.utf8Start[Int(byte & 0x0F)]
                    at += 2
                }
                return at
            }
        }
    }
}
