import CLibPQ
import Foundation
import Logging

/// What libpq answered, made into rows and errors.
extension LibPQConnection {
    /// A result where libpq should have given something else: the connection's failure when
    /// it is an error (libpq reports a dead connection that way), else a protocol error.
    func unexpected(_ result: OpaquePointer, instead expected: String) -> PostgresError {
        let status = PQresultStatus(result)
        if status == PGRES_FATAL_ERROR { return error(from: result, query: nil) }
        return PostgresError(code: .protocolError, message: "expected \(expected), got \(String(cString: PQresStatus(status)))")
    }

    func connectionError(during activity: String) -> PostgresError {
        let message = Self.errorMessage(handle)
        return PostgresError(code: connectionIsLost() ? .connectionLost : .protocolError, message: "\(activity): \(message)")
    }

    /// Whether the server is gone. libpq can fail a read or write before it marks the
    /// connection bad (in pipeline mode, a failed write is remembered while results are still
    /// read), so a connection that still says OK is asked to read once more: that fails, and
    /// marks it bad, when the server has closed it.
    func connectionIsLost() -> Bool {
        PQstatus(handle) != CONNECTION_OK || PQconsumeInput(handle) == 0 || PQstatus(handle) != CONNECTION_OK
    }

    /// Copies a result's rows out of libpq, or turns its error into a `PostgresError` naming
    /// `query`, whose text is only made then: a pipelined statement's is a few kilobytes
    /// joined from its parts.
    func rows(from result: OpaquePointer?, query: @autoclosure () -> String?) throws -> PostgresRows {
        guard let result else { throw connectionError(during: "running a statement") }
        switch PQresultStatus(result) {
        case PGRES_TUPLES_OK, PGRES_COMMAND_OK, PGRES_EMPTY_QUERY, PGRES_SINGLE_TUPLE:
            return materialize(result)
        case PGRES_PIPELINE_ABORTED:
            throw PostgresError(code: .pipelineAborted, message: "skipped after an earlier statement of its unit failed", query: query())
        default:
            throw error(from: result, query: query())
        }
    }

    func error(from result: OpaquePointer, query: String?) -> PostgresError {
        func field(_ code: Character) -> String? {
            guard let value = PQresultErrorField(result, Int32(code.asciiValue!)) else { return nil }
            return String(cString: value)
        }
        let sqlState = field("C")
        var message = field("M") ?? Self.errorMessage(handle)
        if message.isEmpty { message = "unknown error" }
        // Lost connections come back as errors libpq makes itself (no SQLSTATE), or as the
        // server's shutdown and connection errors (57P01–57P03, class 08).
        let lost =
            sqlState?.hasPrefix("08") == true || sqlState == "57P01" || sqlState == "57P02" || sqlState == "57P03"
            || (sqlState == nil ? connectionIsLost() : PQstatus(handle) != CONNECTION_OK)
        return PostgresError(
            code: lost ? .connectionLost : .server, message: message, sqlState: sqlState,
            constraint: field("n"), table: field("t"), column: field("c"), detail: field("D"),
            hint: field("H"), query: query)
    }

    func materialize(_ result: OpaquePointer) -> PostgresRows {
        let rowCount = Int(PQntuples(result))
        let columnCount = Int(PQnfields(result))
        var columns: [PostgresRows.Column] = []
        columns.reserveCapacity(columnCount)
        for column in 0..<columnCount {
            let name = PQfname(result, Int32(column)).map { String(cString: $0) } ?? "?column?"
            columns.append(.init(name: name, type: PostgresType(oid: PQftype(result, Int32(column)))))
        }
        var cells: [(offset: Int, length: Int)] = []
        cells.reserveCapacity(rowCount * columnCount)
        var total = 0
        for row in 0..<Int32(rowCount) {
            for column in 0..<Int32(columnCount) where PQgetisnull(result, row, column) == 0 {
                total += Int(PQgetlength(result, row, column))
            }
        }
        var storage: [UInt8] = []
        storage.reserveCapacity(total)
        for row in 0..<Int32(rowCount) {
            for column in 0..<Int32(columnCount) {
                if PQgetisnull(result, row, column) != 0 {
                    cells.append((storage.count, -1))
                    continue
                }
                let length = Int(PQgetlength(result, row, column))
                cells.append((storage.count, length))
                if length > 0, let value = PQgetvalue(result, row, column) {
                    value.withMemoryRebound(to: UInt8.self, capacity: length) {
                        storage.append(contentsOf: UnsafeBufferPointer(start: $0, count: length))
                    }
                }
            }
        }
        let affected = PQcmdTuples(result).flatMap { Int(String(cString: $0)) } ?? 0
        return PostgresRows(columns: columns, affectedRows: affected, storage: storage, cells: cells, rowCount: rowCount)
    }
}
