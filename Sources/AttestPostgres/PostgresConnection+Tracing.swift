import Tracing

/// A client span for each round trip to PostgreSQL (OpenTelemetry's database conventions),
/// a child of whatever span the caller is in: a request's, a write batch's, a delivery's.
/// With no tracer bootstrapped (`attest serve` without `OTEL_EXPORTER_OTLP_ENDPOINT`) the
/// span is the no-op one and nothing is described: the statement text is built only for a
/// span that records. The text has `$n` placeholders, never a value. A statement outside any
/// span (a worker's poll, every second) is not traced: it would be a trace of its own each time.
extension PostgresConnection {
    func traced<Result>(
        _ name: String, statements: @autoclosure () -> [SQL], units: Int? = nil, _ body: () async throws -> Result
    ) async throws -> Result {
        guard ServiceContext.current != nil else { return try await body() }
        return try await withSpan(name, ofKind: .client) { span in
            if span.isRecording {
                let statements = statements()
                span.updateAttributes { attributes in
                    attributes["db.system.name"] = "postgresql"
                    attributes["db.query.text"] = Self.describe(statements)
                    if statements.count > 1 { attributes["db.operation.batch.size"] = statements.count }
                    if let units { attributes["db.attest.pipeline.units"] = units }
                }
            }
            return try await body()
        }
    }

    /// The statements' text, joined as a batch is, at most 8 KiB (a batch's one statement
    /// per campus can be long; the start of each tells which it is).
    static func describe(_ statements: [SQL]) -> String {
        var text = ""
        for statement in statements {
            if !text.isEmpty { text += ";\n" }
            text += statement.text
            if text.utf8.count > 8_192 { return String(text.utf8.prefix(8_192)) ?? String(text.prefix(2_048)) }
        }
        return text
    }
}
