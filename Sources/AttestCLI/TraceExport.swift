import Logging
import OTel
import ServiceLifecycle
import Tracing

/// Traces for `serve` and `dev`: exported over OTLP/HTTP (protobuf) when
/// `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set, with the
/// standard `OTEL_*` variables (service name, resource attributes, sampler, batch delays,
/// headers, timeout); nothing otherwise, and then no request, statement or delivery pays for a
/// span. Only traces: logs stay on stderr and metrics on `/metrics`.
enum TraceExport {
    /// Bootstraps the tracer and returns the exporter's service (to run with the server,
    /// stopped after it so the last spans are sent), or nil when no endpoint is set.
    static func start(environment: [String: String], logger: Logger) throws -> (any Service)? {
        let endpoint = ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"].first { environment[$0]?.isEmpty == false }
        guard let endpoint, environment["OTEL_SDK_DISABLED"]?.lowercased() != "true" else { return nil }
        if let chosen = environment["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"] ?? environment["OTEL_EXPORTER_OTLP_PROTOCOL"],
            chosen != "http/protobuf"
        {
            throw CLIError(
                "OTEL_EXPORTER_OTLP_PROTOCOL is \(chosen): attest exports traces over OTLP/HTTP only; set it to http/protobuf or unset it"
            )
        }
        var configuration = OTel.Configuration.default
        configuration.serviceName = "attest"
        configuration.logs.enabled = false
        configuration.metrics.enabled = false
        configuration.traces.otlpExporter.protocol = .httpProtobuf
        configuration.diagnosticLogger = .custom(logger)
        // The exporter says what it changed from OTEL_* at start only when asked to (`--log-level debug`).
        configuration.diagnosticLogLevel = logger.logLevel <= .debug ? .debug : .warning
        do {
            let (tracer, service) = try OTel.makeTracingBackend(configuration: configuration)
            InstrumentationSystem.bootstrap(tracer)
            logger.info("exporting traces", metadata: ["variable": "\(endpoint)"])
            return service
        } catch {
            throw CLIError("cannot export traces (\(endpoint)): \(error); check the OTEL_* variables")
        }
    }
}
