/// A PostgreSQL type, by its OID (the built-in ones are fixed across versions).
public struct PostgresType: Sendable, Hashable, CustomStringConvertible {
    public let oid: UInt32
    public init(oid: UInt32) { self.oid = oid }

    public static let bool = PostgresType(oid: 16)
    public static let bytea = PostgresType(oid: 17)
    public static let name = PostgresType(oid: 19)
    public static let int8 = PostgresType(oid: 20)
    public static let int2 = PostgresType(oid: 21)
    public static let int4 = PostgresType(oid: 23)
    public static let text = PostgresType(oid: 25)
    public static let oidType = PostgresType(oid: 26)
    public static let json = PostgresType(oid: 114)
    public static let float4 = PostgresType(oid: 700)
    public static let float8 = PostgresType(oid: 701)
    public static let unknown = PostgresType(oid: 705)
    public static let boolArray = PostgresType(oid: 1000)
    public static let byteaArray = PostgresType(oid: 1001)
    public static let int2Array = PostgresType(oid: 1005)
    public static let int4Array = PostgresType(oid: 1007)
    public static let textArray = PostgresType(oid: 1009)
    public static let varcharArray = PostgresType(oid: 1015)
    public static let int8Array = PostgresType(oid: 1016)
    public static let float8Array = PostgresType(oid: 1022)
    public static let bpchar = PostgresType(oid: 1042)
    public static let varchar = PostgresType(oid: 1043)
    public static let date = PostgresType(oid: 1082)
    public static let timestamp = PostgresType(oid: 1114)
    public static let timestamptz = PostgresType(oid: 1184)
    public static let timestamptzArray = PostgresType(oid: 1185)
    public static let numeric = PostgresType(oid: 1700)
    public static let uuid = PostgresType(oid: 2950)
    public static let uuidArray = PostgresType(oid: 2951)
    public static let jsonb = PostgresType(oid: 3802)

    public var description: String {
        switch self {
        case .bool: "boolean"
        case .bytea: "bytea"
        case .name: "name"
        case .int8: "bigint"
        case .int2: "smallint"
        case .int4: "integer"
        case .text: "text"
        case .oidType: "oid"
        case .json: "json"
        case .float4: "real"
        case .float8: "double precision"
        case .unknown: "unknown"
        case .boolArray: "boolean[]"
        case .byteaArray: "bytea[]"
        case .int2Array: "smallint[]"
        case .int4Array: "integer[]"
        case .textArray: "text[]"
        case .varcharArray: "varchar[]"
        case .int8Array: "bigint[]"
        case .float8Array: "double precision[]"
        case .bpchar: "character"
        case .varchar: "varchar"
        case .date: "date"
        case .timestamp: "timestamp"
        case .timestamptz: "timestamptz"
        case .timestamptzArray: "timestamptz[]"
        case .numeric: "numeric"
        case .uuid: "uuid"
        case .uuidArray: "uuid[]"
        case .jsonb: "jsonb"
        default: "type oid \(oid)"
        }
    }

    var isTextLike: Bool { self == .text || self == .varchar || self == .name || self == .bpchar || self == .unknown }
}
