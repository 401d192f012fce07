import CLibPQ
import Foundation
import Logging

/// `COPY … FROM STDIN` in the binary format.
extension LibPQConnection {
    /// Runs `COPY table (columns) FROM STDIN` in the binary format and sends the rows
    /// `produce` writes, a buffer at a time, until it returns false. Returns the rows the
    /// server stored. When `produce` throws, the copy is ended with an error so the server
    /// stores none of it (and the transaction, if any, is aborted), and the error is rethrown.
    func copyIn(table: String, columns: [String], produce: (inout BinaryCopyRows) throws -> Bool) throws -> Int {
        let statement =
            "COPY \(quoteIdentifier(table)) (\(columns.map(quoteIdentifier).joined(separator: ", "))) FROM STDIN WITH (FORMAT binary)"
        let started = PQexec(handle, statement)
        defer { PQclear(started) }
        guard let started, PQresultStatus(started) == PGRES_COPY_IN else {
            _ = try rows(from: started, query: statement)
            throw PostgresError(code: .protocolError, message: "expected the server to start a COPY", query: statement)
        }
        var rows = BinaryCopyRows()
        var stopped: (any Error)?
        rows.header()
        var more = true
        while more {
            do {
                more = try produce(&rows)
            } catch {
                stopped = error
                break
            }
            if !more { rows.trailer() }
            if rows.byteCount > 0 {
                // Blocking: fails only when the connection does. An error of the server's (a
                // refused row) comes as the copy's result, once it has been ended.
                guard PQputCopyData(handle, rows.base.assumingMemoryBound(to: CChar.self), Int32(rows.byteCount)) == 1 else {
                    broken = true
                    throw connectionError(during: "sending COPY data")
                }
                rows.reset()
            }
        }
        guard PQputCopyEnd(handle, stopped == nil ? nil : "the client stopped the copy") == 1 else {
            broken = true
            throw connectionError(during: "ending a COPY")
        }
        let result = PQgetResult(handle)
        let outcome = Result { try self.rows(from: result, query: statement) }
        PQclear(result)
        // The copy's result ends with a NULL.
        while let extra = PQgetResult(handle) { PQclear(extra) }
        if let stopped { throw stopped }
        return try outcome.get().affectedRows
    }
}
