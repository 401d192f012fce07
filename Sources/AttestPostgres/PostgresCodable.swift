import Foundation

/// A Swift value that can be bound as a query parameter (binary wire format).
///
/// Implementation requirements: `encode(into:)` appends exactly the binary representation
/// PostgreSQL's `<type>_recv` expects for `postgresType`, and throws `PostgresCodingFailure`
/// for a value the type cannot hold.
public protocol PostgresEncodable: Sendable {
    /// The type the parameter is declared as.
    static var postgresType: PostgresType { get }
    /// Appends the value's binary representation.
    func encode(into buffer: inout [UInt8]) throws
}

/// A Swift value that can be read from a result column (binary wire format).
///
/// Implementation requirements: `decode(from:type:)` checks `type` and throws
/// `PostgresCodingFailure` naming what it expected when the column is of another type.
public protocol PostgresDecodable: Sendable {
    /// Reads a non-NULL value of `type`.
    static func decode(from bytes: UnsafeRawBufferPointer, type: PostgresType) throws -> Self
    /// The value for SQL NULL. By default NULL is an error; `Optional` answers nil.
    static func decodeNull() throws -> Self
}

extension PostgresDecodable {
    public static func decodeNull() throws -> Self { throw PostgresCodingFailure("the value is NULL") }
}

public typealias PostgresCodable = PostgresEncodable & PostgresDecodable

/// Why a value could not be encoded or decoded; `PostgresRow` adds the column's name.
public struct PostgresCodingFailure: Error, Sendable {
    public var reason: String
    public init(_ reason: String) { self.reason = reason }
    static func mismatch(_ swiftType: Any.Type, _ type: PostgresType) -> PostgresCodingFailure {
        PostgresCodingFailure("type \(type) cannot be decoded as \(swiftType)")
    }
}

// MARK: - Binary helpers

extension UnsafeRawBufferPointer {
    func readInteger<T: FixedWidthInteger>(at offset: Int = 0, as: T.Type = T.self) throws -> T {
        guard offset >= 0, offset + MemoryLayout<T>.size <= count else {
            throw PostgresCodingFailure("a value is shorter than its type requires")
        }
        return T(bigEndian: loadUnaligned(fromByteOffset: offset, as: T.self))
    }
}

extension Array where Element == UInt8 {
    mutating func appendInteger<T: FixedWidthInteger>(_ value: T) {
        Swift.withUnsafeBytes(of: value.bigEndian) { append(contentsOf: $0) }
    }
}

// MARK: - Scalars

extension Bool: PostgresCodable {
    public static var postgresType: PostgresType { .bool }
    public func encode(into buffer: inout [UInt8]) { buffer.append(self ? 1 : 0) }
    public static func decode(from bytes: UnsafeRawBufferPointer, type: PostgresType) throws -> Bool {
        guard type == .bool else { throw PostgresCodingFailure.mismatch(Bool.self, type) }
        return try bytes.readInteger(as: UInt8.self) != 0
    }
}

/// Reads any PostgreSQL integer column, refusing values that do not fit `T`.
private func decodeInteger<T: FixedWidthInteger>(_ bytes: UnsafeRawBufferPointer, _ type: PostgresType) throws -> T {
    let wide: Int64
    switch type {
    case .int2: wide = Int64(try bytes.readInteger(as: Int16.self))
    case .int4: wide = Int64(try bytes.readInteger(as: Int32.self))
    case .int8: wide = try bytes.readInteger(as: Int64.self)
    default: throw PostgresCodingFailure.mismatch(T.self, type)
    }
    guard let value = T(exactly: wide) else {
        throw PostgresCodingFailure("the \(type) value \(wide) does not fit in \(T.self)")
    }
    return value
}

extension Int16: PostgresCodable {
    public static var postgresType: PostgresType { .int2 }
    public func encode(into buffer: inout [UInt8]) { buffer.appendInteger(self) }
    public static func decode(from bytes: UnsafeRawBufferPointer, type: PostgresType) throws -> Int16 {
        try decodeInteger(bytes, type)
    }
}

extension Int32: PostgresCodable {
    public static var postgresType: PostgresType { .int4 }
    public func encode(into buffer: inout [UInt8]) { buffer.appendInteger(self) }
    public static func decode(from bytes: UnsafeRawBufferPointer, type: PostgresType) throws -> Int32 {
        try decodeInteger(bytes, type)
    }
}

extension Int64: PostgresCodable {
    public static var postgresType: PostgresType { .int8 }
    public func encode(into buffer: inout [UInt8]) { buffer.appendInteger(self) }
    public static func decode(from bytes: UnsafeRawBufferPointer, type: PostgresType) throws -> Int64 {
        try decodeInteger(bytes, type)
    }
}

extension Int: PostgresCodable {
    public static var postgresType: PostgresType { .int8 }
    public func encode(into buffer: inout [UInt8]) { buffer.appendInteger(Int64(self)) }
    public static func decode(from bytes: UnsafeRawBufferPointer, type: PostgresType) throws -> Int {
        try decodeInteger(bytes, type)
    }
}

extension Double: PostgresCodable {
    public static var postgresType: PostgresType { .float8 }
    public func encode(into buffer: inout [UInt8]) { buffer.appendInteger(bitPattern) }
    public static func decode(from bytes: UnsafeRawBufferPointer, type: PostgresType) throws -> Double {
        switch type {
        case .float8: return Double(bitPattern: try bytes.readInteger(as: UInt64.self))
        case .float4: return Double(Float(bitPattern: try bytes.readInteger(as: UInt32.self)))
        default: throw PostgresCodingFailure.mismatch(Double.self, type)
        }
    }
}

extension String: PostgresCodable {
    public static var postgresType: PostgresType { .text }
    public func encode(into buffer: inout [UInt8]) throws {
        let start = buffer.count
        buffer.append(contentsOf: utf8)
        // PostgreSQL text cannot hold NUL; say so here rather than as an encoding error later.
        if buffer[start...].contains(0) {
            throw PostgresCodingFailure("text contains a NUL character (U+0000), which PostgreSQL cannot store")
        }
    }
    public static func decode(from bytes: UnsafeRawBufferPointer, type: PostgresType) throws -> String {
        guard type.isTextLike else { throw PostgresCodingFailure.mismatch(String.self, type) }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// Microseconds between 1970-01-01 and PostgreSQL's epoch, 2000-01-01 UTC.
private let postgresEpochSeconds: Double = 946_684_800

extension Date: PostgresCodable {
    public static var postgresType: PostgresType { .timestamptz }
    public func encode(into buffer: inout [UInt8]) throws {
        let micros = ((timeIntervalSince1970 - postgresEpochSeconds) * 1_000_000).rounded()
        guard let value = Int64(exactly: micros) else {
            // Not `\(self)`: Foundation's description of a date that is NaN or infinite traps.
            throw PostgresCodingFailure("the time \(timeIntervalSince1970) s after 1970 is outside PostgreSQL's timestamp range")
        }
        buffer.appendInteger(value)
    }
    public static func decode(from bytes: UnsafeRawBufferPointer, type: PostgresType) throws -> Date {
        guard type == .timestamptz || type == .timestamp else { throw PostgresCodingFailure.mismatch(Date.self, type) }
        let micros = try bytes.readInteger(as: Int64.self)
        if micros == .max { return .distantFuture }
        if micros == .min { return .distantPast }
        return Date(timeIntervalSince1970: Double(micros) / 1_000_000 + postgresEpochSeconds)
    }
}

/// Days between 1970-01-01 and 2000-01-01.
private let postgresEpochDays = 10_957

extension PostgresDate: PostgresCodable {
    public static var postgresType: PostgresType { .date }
    public func encode(into buffer: inout [UInt8]) throws {
        guard let days = Int32(exactly: daysSinceUnixEpoch - postgresEpochDays) else {
            throw PostgresCodingFailure("the date \(self) is outside PostgreSQL's date range")
        }
        buffer.appendInteger(days)
    }
    public static func decode(from bytes: UnsafeRawBufferPointer, type: PostgresType) throws -> PostgresDate {
        guard type == .date else { throw PostgresCodingFailure.mismatch(PostgresDate.self, type) }
        let days = try bytes.readInteger(as: Int32.self)
        guard days != .max, days != .min else { throw PostgresCodingFailure("an infinite date has no calendar day") }
        return PostgresDate(daysSinceUnixEpoch: Int(days) + postgresEpochDays)
    }
}

extension UUID: PostgresCodable {
    public static var postgresType: PostgresType { .uuid }
    public func encode(into buffer: inout [UInt8]) { withUnsafeBytes(of: uuid) { buffer.append(contentsOf: $0) } }
    public static func decode(from bytes: UnsafeRawBufferPointer, type: PostgresType) throws -> UUID {
        guard type == .uuid else { throw PostgresCodingFailure.mismatch(UUID.self, type) }
        guard bytes.count == 16 else { throw PostgresCodingFailure("a uuid value is not 16 bytes") }
        var value: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &value) { $0.copyMemory(from: bytes) }
        return UUID(uuid: value)
    }
}

extension Data: PostgresCodable {
    public static var postgresType: PostgresType { .bytea }
    public func encode(into buffer: inout [UInt8]) { buffer.append(contentsOf: self) }
    public static func decode(from bytes: UnsafeRawBufferPointer, type: PostgresType) throws -> Data {
        guard type == .bytea else { throw PostgresCodingFailure.mismatch(Data.self, type) }
        return Data(bytes)
    }
}

/// A `jsonb` value: the JSON text, checked by the server on the way in.
public struct PostgresJSON: PostgresCodable, Hashable {
    /// UTF-8 JSON text.
    public var bytes: [UInt8]

    public init(bytes: [UInt8]) { self.bytes = bytes }
    public init(_ text: String) { self.bytes = Array(text.utf8) }
    /// Encodes `value` with `JSONEncoder`.
    public init(encoding value: some Encodable, encoder: JSONEncoder = JSONEncoder()) throws {
        self.bytes = Array(try encoder.encode(value))
    }

    public var text: String { String(decoding: bytes, as: UTF8.self) }
    /// Decodes the JSON with `JSONDecoder`.
    public func decode<T: Decodable>(as type: T.Type = T.self, decoder: JSONDecoder = JSONDecoder()) throws -> T {
        try decoder.decode(T.self, from: Data(bytes))
    }

    public static var postgresType: PostgresType { .jsonb }
    public func encode(into buffer: inout [UInt8]) throws {
        if bytes.contains(0) { throw PostgresCodingFailure("JSON text contains a NUL character") }
        buffer.append(1)  // jsonb binary format version
        buffer.append(contentsOf: bytes)
    }
    public static func decode(from bytes: UnsafeRawBufferPointer, type: PostgresType) throws -> PostgresJSON {
        PostgresJSON(bytes: Array(try text(in: bytes, type: type)))
    }

    /// The JSON text in a `json` or `jsonb` value's bytes, without a copy: for a
    /// `PostgresDecodable` that reads JSON in place.
    public static func text(in bytes: UnsafeRawBufferPointer, type: PostgresType) throws -> UnsafeRawBufferPointer {
        switch type {
        case .json: return bytes
        case .jsonb:
            guard bytes.first == 1 else { throw PostgresCodingFailure("unknown jsonb format version") }
            return UnsafeRawBufferPointer(rebasing: bytes.dropFirst())
        default: throw PostgresCodingFailure.mismatch(PostgresJSON.self, type)
        }
    }
}

extension Optional: PostgresDecodable where Wrapped: PostgresDecodable {
    public static func decode(from bytes: UnsafeRawBufferPointer, type: PostgresType) throws -> Wrapped? {
        try Wrapped.decode(from: bytes, type: type)
    }
    public static func decodeNull() throws -> Wrapped? { nil }
}

// MARK: - Arrays

/// An element type of a one-dimensional array parameter or column.
public protocol PostgresArrayElement: PostgresCodable {
    /// The array type whose elements are `postgresType`.
    static var postgresArrayType: PostgresType { get }
}

extension Int64: PostgresArrayElement { public static var postgresArrayType: PostgresType { .int8Array } }
extension Int32: PostgresArrayElement { public static var postgresArrayType: PostgresType { .int4Array } }
extension Bool: PostgresArrayElement { public static var postgresArrayType: PostgresType { .boolArray } }
extension Double: PostgresArrayElement { public static var postgresArrayType: PostgresType { .float8Array } }
extension String: PostgresArrayElement { public static var postgresArrayType: PostgresType { .textArray } }
extension UUID: PostgresArrayElement { public static var postgresArrayType: PostgresType { .uuidArray } }
extension Data: PostgresArrayElement { public static var postgresArrayType: PostgresType { .byteaArray } }
extension Date: PostgresArrayElement { public static var postgresArrayType: PostgresType { .timestamptzArray } }

extension Array: PostgresEncodable where Element: PostgresArrayElement {
    public static var postgresType: PostgresType { Element.postgresArrayType }
    public func encode(into buffer: inout [UInt8]) throws {
        buffer.appendInteger(Int32(1))  // dimensions
        buffer.appendInteger(Int32(0))  // no NULL elements
        buffer.appendInteger(Element.postgresType.oid)
        buffer.appendInteger(Int32(count))
        buffer.appendInteger(Int32(1))  // lower bound
        for element in self {
            let lengthAt = buffer.count
            buffer.appendInteger(Int32(0))
            try element.encode(into: &buffer)
            let length = Int32(buffer.count - lengthAt - 4).bigEndian
            Swift.withUnsafeBytes(of: length) { raw in
                for (offset, byte) in raw.enumerated() { buffer[lengthAt + offset] = byte }
            }
        }
    }
}

extension Array: PostgresDecodable where Element: PostgresArrayElement {
    public static func decode(from bytes: UnsafeRawBufferPointer, type: PostgresType) throws -> [Element] {
        let elementsOfText = Element.self == String.self && type == .varcharArray
        guard type == Element.postgresArrayType || elementsOfText else {
            throw PostgresCodingFailure.mismatch([Element].self, type)
        }
        let dimensions = try bytes.readInteger(at: 0, as: Int32.self)
        if dimensions == 0 { return [] }
        guard dimensions == 1 else {
            throw PostgresCodingFailure("a \(dimensions)-dimensional array cannot be decoded as \([Element].self)")
        }
        let elementType = PostgresType(oid: try bytes.readInteger(at: 8, as: UInt32.self))
        let count = Int(try bytes.readInteger(at: 12, as: Int32.self))
        var offset = 20
        var result: [Element] = []
        result.reserveCapacity(count)
        for _ in 0..<count {
            let length = Int(try bytes.readInteger(at: offset, as: Int32.self))
            offset += 4
            guard length >= 0 else { throw PostgresCodingFailure("the array holds NULL, which \(Element.self) cannot") }
            guard offset + length <= bytes.count else { throw PostgresCodingFailure("an array element overruns its value") }
            let slice = UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + length])
            result.append(try Element.decode(from: slice, type: elementType))
            offset += length
        }
        return result
    }
}
