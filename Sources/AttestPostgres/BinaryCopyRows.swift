/// Rows in PostgreSQL's binary `COPY` format, written into a growing buffer that
/// `PostgresConnection.copy(into:columns:rows:)` sends each time its producer returns.
/// Not copyable: it owns its buffer, and a value type's accesses are checked when compiled,
/// not at run time as a class's stored properties are (a cost per field here).
///
/// A row is its field count, then each field as its byte length and the bytes `<type>_recv`
/// reads (big-endian integers), or a length of -1 for NULL. Each row must give exactly the
/// fields the `COPY` names, in its order; the server checks the count and every value.
public struct BinaryCopyRows: ~Copyable {
    @usableFromInline var base: UnsafeMutableRawPointer
    @usableFromInline var capacity: Int
    @usableFromInline var count = 0

    init(capacity: Int = 1 << 20) {
        self.capacity = capacity
        self.base = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
    }

    deinit { base.deallocate() }

    /// Bytes written since the last send.
    public var byteCount: Int { count }

    /// The file header: signature, flags (none) and header extension length (0).
    mutating func header() {
        raw([0x50, 0x47, 0x43, 0x4F, 0x50, 0x59, 0x0A, 0xFF, 0x0D, 0x0A, 0x00])  // "PGCOPY\n\xFF\r\n\0"
        put(Int32(0))
        put(Int32(0))
    }

    /// The file trailer: a field count of -1.
    mutating func trailer() { put(Int16(-1)) }

    mutating func reset() { count = 0 }

    /// Starts a row of `fields` fields.
    @inlinable public mutating func row(fields: Int16) { put(fields) }

    @inlinable public mutating func null() { put(Int32(-1)) }

    @inlinable public mutating func bool(_ value: Bool) {
        put(Int32(1))
        put(UInt8(value ? 1 : 0))
    }

    @inlinable public mutating func int32(_ value: Int32) {
        put(Int32(4))
        put(value)
    }

    @inlinable public mutating func int64(_ value: Int64) {
        put(Int32(8))
        put(value)
    }

    /// A `uuid` of 16 bytes: `high`'s eight, then `low`'s, each big-endian.
    @inlinable public mutating func uuid(high: UInt64, low: UInt64) {
        put(Int32(16))
        put(high)
        put(low)
    }

    /// A `date`: days since 2000-01-01.
    @inlinable public mutating func date(daysSince2000 days: Int32) { int32(days) }

    /// A `timestamptz`: microseconds since 2000-01-01 00:00 UTC.
    @inlinable public mutating func timestamp(microsecondsSince2000 microseconds: Int64) { int64(microseconds) }

    /// A field of these bytes (`text`'s UTF-8; `jsonb`'s version byte 1 and the JSON text).
    public mutating func field(_ bytes: [UInt8]) {
        put(Int32(bytes.count))
        raw(bytes)
    }

    /// Bytes exactly as given: fields encoded beforehand, with their lengths (`encodedField`).
    @inlinable public mutating func raw(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { source in
            reserve(source.count)
            if let address = source.baseAddress { (base + count).copyMemory(from: address, byteCount: source.count) }
            count += source.count
        }
    }

    /// A field's bytes with its length, to write many times with `raw`.
    public static func encodedField(_ bytes: [UInt8]?) -> [UInt8] {
        guard let bytes else { return [0xFF, 0xFF, 0xFF, 0xFF] }
        var encoded: [UInt8] = []
        encoded.appendInteger(Int32(bytes.count))
        return encoded + bytes
    }

    @inlinable mutating func put<T: FixedWidthInteger>(_ value: T) {
        let size = MemoryLayout<T>.size
        reserve(size)
        (base + count).storeBytes(of: value.bigEndian, as: T.self)
        count += size
    }

    @inlinable mutating func reserve(_ size: Int) {
        if count + size > capacity { grow(to: count + size) }
    }

    @usableFromInline mutating func grow(to needed: Int) {
        let larger = max(capacity * 2, needed)
        let moved = UnsafeMutableRawPointer.allocate(byteCount: larger, alignment: 16)
        moved.copyMemory(from: base, byteCount: count)
        base.deallocate()
        base = moved
        capacity = larger
    }
}
