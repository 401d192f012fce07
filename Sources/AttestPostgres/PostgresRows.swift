/// The rows a statement returned, copied out of libpq's result in one buffer.
public struct PostgresRows: Sendable, RandomAccessCollection {
    /// A result column: its name and PostgreSQL type.
    public struct Column: Sendable, Hashable {
        public let name: String
        public let type: PostgresType
    }

    public let columns: [Column]
    /// Rows inserted, updated or deleted, from the command tag (0 for other statements).
    public let affectedRows: Int
    let storage: [UInt8]
    /// Per cell, row-major: start offset into `storage` and length, -1 for NULL.
    let cells: [(offset: Int, length: Int)]
    let rowCount: Int

    init(columns: [Column], affectedRows: Int, storage: [UInt8], cells: [(offset: Int, length: Int)], rowCount: Int) {
        self.columns = columns
        self.affectedRows = affectedRows
        self.storage = storage
        self.cells = cells
        self.rowCount = rowCount
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { rowCount }
    public subscript(position: Int) -> PostgresRow { PostgresRow(rows: self, index: position) }

    func columnIndex(named name: String) -> Int? { columns.firstIndex { $0.name == name } }

    /// Where the column named `name` is, for `PostgresRow.decode(at:)`: a reader of many rows
    /// finds its columns once instead of by name in every row.
    public func position(of name: String) throws -> Int {
        guard let position = columnIndex(named: name) else {
            let names = columns.map(\.name).joined(separator: ", ")
            throw PostgresError(code: .decoding, message: "no column \"\(name)\" in the result (columns: \(names))")
        }
        return position
    }

}

/// One row of a result; decode its columns by name or by position.
public struct PostgresRow: Sendable {
    let rows: PostgresRows
    let index: Int

    public var columns: [PostgresRows.Column] { rows.columns }

    /// Decodes the column named `column`. A NULL decodes only as an `Optional`.
    public func decode<T: PostgresDecodable>(_ column: String, as type: T.Type = T.self) throws -> T {
        return try decode(at: try rows.position(of: column), as: type)
    }

    /// Decodes the column at `position` (0-based).
    public func decode<T: PostgresDecodable>(at position: Int, as type: T.Type = T.self) throws -> T {
        guard rows.columns.indices.contains(position) else {
            throw PostgresError(code: .decoding, message: "no column at index \(position); the result has \(rows.columns.count)")
        }
        let column = rows.columns[position]
        let cell = rows.cells[index * rows.columns.count + position]
        do {
            if cell.length < 0 { return try T.decodeNull() }
            return try rows.storage.withUnsafeBytes { raw in
                try T.decode(from: UnsafeRawBufferPointer(rebasing: raw[cell.offset..<cell.offset + cell.length]), type: column.type)
            }
        } catch let failure as PostgresCodingFailure {
            throw PostgresError(
                code: .decoding,
                message: "column \"\(column.name)\" (\(column.type)) as \(T.self): \(failure.reason)",
                column: column.name)
        }
    }

    /// Whether the named column is SQL NULL in this row.
    public func isNull(_ column: String) -> Bool {
        guard let position = rows.columnIndex(named: column) else { return true }
        return isNull(at: position)
    }

    /// Whether the column at `position` is SQL NULL in this row (true past the last column).
    public func isNull(at position: Int) -> Bool {
        guard rows.columns.indices.contains(position) else { return true }
        return rows.cells[index * rows.columns.count + position].length < 0
    }
}
