import CLibPQ
import Foundation
import Logging

/// Pipelines: every unit's statements sent in one go, each unit an implicit (or explicit)
/// transaction, its results read back.
extension LibPQConnection {
    /// Sends every unit's statements and a sync after each unit, in one go, then reads all
    /// the results. Statements of one unit run as one implicit transaction: a failure rolls
    /// back and skips the rest of its own unit only. Throws only when the connection broke,
    /// after which the outcome of the units is unknown.
    func pipeline(_ units: [PipelineUnit]) throws -> [Result<[PostgresRows], PostgresError>] {
        guard settingsStyle == .setLocal else { return try pipelineOnce(units) }
        // Units in explicit transaction blocks: one that fails leaves its block aborted, and
        // every unit after it then fails at its BEGIN (25P02). Roll back and send those again.
        var outcomes: [Result<[PostgresRows], PostgresError>] = []
        var rest = units[...]
        while !rest.isEmpty {
            if PQtransactionStatus(handle) == PQTRANS_INERROR { try runScript("ROLLBACK") }
            let sent = try pipelineOnce(Array(rest))
            let poisoned = sent.firstIndex {
                if case .failure(let error) = $0 { return error.sqlState == "25P02" }
                return false
            }
            // The first unit of a batch starts clean, so it is never among the poisoned ones.
            guard let poisoned, poisoned > 0 else {
                outcomes.append(contentsOf: sent)
                break
            }
            outcomes.append(contentsOf: sent[..<poisoned])
            rest = rest.dropFirst(poisoned)
        }
        if PQtransactionStatus(handle) == PQTRANS_INERROR { try runScript("ROLLBACK") }
        return outcomes
    }

    /// `BEGIN` and `settings`, in one round trip.
    func begin(_ settings: TransactionSettings) throws {
        let sets = settings.statements(settingsStyle)
        if sets.isEmpty {
            try runScript("BEGIN")
            return
        }
        if let failure = sets.lazy.compactMap(\.encodingFailure).first { throw failure }
        do {
            if settingsStyle == .setLocal {
                try runScript((["BEGIN"] + sets.map(\.text)).joined(separator: "; "))
            } else {
                _ = try pipelineOnce([PipelineUnit(statements: ["BEGIN"] + sets)])[0].get()
            }
        } catch let error as PostgresError {
            // A setting the server refused leaves the block aborted.
            if error.code != .connectionLost { _ = try? runScript("ROLLBACK") }
            throw error
        }
    }

    func pipelineOnce(_ units: [PipelineUnit]) throws -> [Result<[PostgresRows], PostgresError>] {
        let plans = units.map { $0.plan(settingsStyle) }
        // New statements are prepared first, outside the pipeline.
        let names: [[String?]] = plans.map { plan in
            guard plan.statements.allSatisfy({ $0.encodingFailure == nil }) else { return [] }
            return plan.statements.map { prepare($0, text: $0.text) }
        }
        return try receive(try send(plans, names: names))
    }

    /// A pipeline whose statements have all been handed to libpq, for `receive` to read back.
    struct SentPipeline: @unchecked Sendable {  // only moves with its connection, to the pool's thread
        let plans: [(statements: [SQL], callers: [Bool])]
        /// Per unit, the statements sent; none for a unit that failed before sending.
        let sent: [[SQL]]
        /// The units that failed before anything of them was sent.
        let refused: [PostgresError?]
        /// Whether it was sent in nonblocking mode, which `receive` ends.
        let nonblocking: Bool
    }

    /// Sends `units` without blocking, from the caller's thread, when every statement of them
    /// is prepared on this connection already (or takes no parameters) and the connection
    /// makes settings with `set_config`: the statements then reach PostgreSQL while the pool's
    /// thread that will read the results wakes (measured: about 0.2 ms a call under load),
    /// instead of after. nil when that is not so (run `pipeline` on the pool instead); throws
    /// only when the connection broke.
    func sendWithoutBlocking(_ units: [PipelineUnit]) throws -> SentPipeline? {
        guard settingsStyle == .setConfig, !broken else { return nil }
        let plans = units.map { $0.plan(settingsStyle) }
        var names: [[String?]] = []
        names.reserveCapacity(plans.count)
        for plan in plans {
            var unit: [String?] = []
            unit.reserveCapacity(plan.statements.count)
            for sql in plan.statements {
                guard sql.encodingFailure == nil else { return nil }
                if sql.bindings.isEmpty {
                    unit.append(nil)
                    continue
                }
                let text = sql.text
                guard let name = prepared[PreparedKey(text: text, types: sql.bindings.map { UInt32($0.type.oid) })] else { return nil }
                unit.append(name)
            }
            names.append(unit)
        }
        guard PQsetnonblocking(handle, 1) == 0 else { return nil }
        do {
            return try send(plans, names: names, nonblocking: true)
        } catch {
            broken = true
            throw error
        }
    }

    /// Enters pipeline mode and sends every unit's statements, a sync after each.
    func send(
        _ plans: [(statements: [SQL], callers: [Bool])], names: [[String?]], nonblocking: Bool = false
    ) throws -> SentPipeline {
        guard PQenterPipelineMode(handle) == 1 else {
            throw connectionError(during: "entering pipeline mode")
        }
        var refused: [PostgresError?] = Array(repeating: nil, count: plans.count)
        var sentStatements: [[SQL]] = Array(repeating: [], count: plans.count)
        do {
            for (index, plan) in plans.enumerated() {
                let statements = plan.statements
                // A value that cannot be encoded fails its unit before anything of it is sent.
                if let failure = statements.lazy.compactMap(\.encodingFailure).first {
                    refused[index] = failure
                    continue
                }
                for (sql, name) in zip(statements, names[index]) {
                    let sent = withParameters(of: sql) { count, types, values, lengths, formats in
                        if let name { return PQsendQueryPrepared(handle, name, count, values, lengths, formats, 1) }
                        return PQsendQueryParams(handle, sql.text, count, types, values, lengths, formats, 1)
                    }
                    guard sent == 1 else { throw connectionError(during: "sending a pipelined statement") }
                }
                guard PQpipelineSync(handle) == 1 else { throw connectionError(during: "sending a pipeline sync") }
                sentStatements[index] = statements
            }
            // Nonblocking, what the socket did not take now is sent by `receive`.
            if nonblocking, PQflush(handle) < 0 { throw connectionError(during: "sending a pipeline") }
        } catch {
            // The connection's protocol state is unknown now; the pool will discard it.
            broken = true
            throw error
        }
        return SentPipeline(plans: plans, sent: sentStatements, refused: refused, nonblocking: nonblocking)
    }

    /// Reads the results of a sent pipeline (blocking) and leaves pipeline mode.
    func receive(_ sent: SentPipeline) throws -> [Result<[PostgresRows], PostgresError>] {
        var outcomes: [Result<[PostgresRows], PostgresError>?] = sent.refused.map { $0.map { .failure($0) } }
        do {
            if sent.nonblocking { try endNonblocking() }
            for index in sent.plans.indices where outcomes[index] == nil {
                var results: [PostgresRows] = []
                var failure: PostgresError?
                for (sql, callers) in zip(sent.sent[index], sent.plans[index].callers) {
                    guard let result = PQgetResult(handle) else { throw connectionError(during: "reading pipeline results") }
                    do {
                        let rows = try rows(from: result, query: sql.text)
                        PQclear(result)
                        // Callers see their own statements' rows only, not the settings' or BEGIN's.
                        if callers { results.append(rows) }
                    } catch let error as PostgresError {
                        PQclear(result)
                        if error.code == .connectionLost { throw error }
                        // The first error is the cause; the statements after it report "aborted".
                        if failure == nil { failure = error }
                    }
                    // Each statement's results end with a NULL.
                    if let extra = PQgetResult(handle) {
                        defer { PQclear(extra) }
                        throw unexpected(extra, instead: "the end of a pipelined statement's results")
                    }
                }
                guard let sync = PQgetResult(handle) else { throw connectionError(during: "reading a pipeline sync") }
                defer { PQclear(sync) }
                guard PQresultStatus(sync) == PGRES_PIPELINE_SYNC else { throw unexpected(sync, instead: "a pipeline sync") }
                outcomes[index] = failure.map { .failure($0) } ?? .success(results)
            }
        } catch {
            // The connection's protocol state is unknown now; the pool will discard it.
            broken = true
            throw error
        }
        guard PQexitPipelineMode(handle) == 1 else {
            throw connectionError(during: "leaving pipeline mode")
        }
        return outcomes.map { $0 ?? .failure(PostgresError(code: .protocolError, message: "a pipelined unit got no outcome")) }
    }

    /// Sends what a nonblocking send left in libpq's buffer, waiting for the socket as it
    /// must, and returns the connection to blocking mode (every other call expects it).
    func endNonblocking() throws {
        var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN | POLLOUT), revents: 0)
        while true {
            let pending = PQflush(handle)
            if pending == 0 { break }
            guard pending == 1, descriptor.fd >= 0 else { throw connectionError(during: "sending a pipeline") }
            descriptor.revents = 0
            guard poll(&descriptor, 1, -1) >= 0 || errno == EINTR else { throw connectionError(during: "waiting to send a pipeline") }
            // Reading what the server sent meanwhile keeps both sides from waiting on each other.
            if descriptor.revents & Int16(POLLIN) != 0, PQconsumeInput(handle) == 0 {
                throw connectionError(during: "sending a pipeline")
            }
        }
        guard PQsetnonblocking(handle, 0) == 0 else { throw connectionError(during: "returning to blocking mode") }
    }
}
