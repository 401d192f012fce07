#!/usr/bin/env python3
"""A submission's trace, from its route through its batch to its webhook delivery (issue 58).

    traces.py submission   `attest serve` with OTEL_EXPORTER_OTLP_ENDPOINT at a loopback
                           OTLP/HTTP receiver that decodes what it gets with the PyPI
                           `opentelemetry-proto` package (the OpenTelemetry project's own
                           protobuf definitions): one trace holds the request's server span,
                           the write batch, its pipeline, the outbox delivery and the webhook's
                           client span, whose traceparent the receiver got; no span says a
                           token, an email or an answer. Then the same server without the
                           variable: no span is sent and the webhook gets no traceparent.

Environment as for scaleout.py. Run by Tests/AttestServerTests/ScaleOutTests.swift.
"""
import http.server
import json
import os
import sys
import threading
import time

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scaleout as s  # noqa: E402  (the cluster, the server, the requests)

CAMPUS = s.CAMPUS
# A caller's own trace (W3C's example ids): the server continues it.
CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"


def otlp_receiver():
    """An OTLP/HTTP receiver: POST /v1/traces with an ExportTraceServiceRequest (binary
    protobuf, gzip or not), answered with an empty ExportTraceServiceResponse."""
    spans, lock = [], threading.Lock()

    class Receiver(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            if self.headers.get("Content-Encoding") == "gzip":
                import gzip
                body = gzip.decompress(body)
            request = trace_service_pb2.ExportTraceServiceRequest()
            request.ParseFromString(body)
            with lock:
                for resource_spans in request.resource_spans:
                    service = {a.key: a.value.string_value for a in resource_spans.resource.attributes}.get("service.name")
                    for scope_spans in resource_spans.scope_spans:
                        for span in scope_spans.spans:
                            spans.append((self.path, self.headers.get("Content-Type"), service, span))
            answer = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args):
            pass

    server = s.Receiving(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, spans, lock


def webhook_receiver():
    """A webhook receiver keeping each delivery's event and traceparent header."""
    deliveries, lock = [], threading.Lock()

    class Receiver(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with lock:
                deliveries.append((body.get("event"), body.get("userId"), self.headers.get("traceparent")))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = s.Receiving(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, deliveries, lock


def attributes(span):
    values = {}
    for a in span.attributes:
        kind = a.value.WhichOneof("value")
        values[a.key] = getattr(a.value, kind) if kind else None
    return values


def submission(base):
    db, tokens, _ = s.campus_database(base, 2)
    owner = f"postgresql://postgres@{db.host()}/attest"
    hook, deliveries, hook_lock = webhook_receiver()
    settings = os.path.join(base, "webhook.json")
    with open(settings, "w") as f:
        json.dump({"url": f"http://127.0.0.1:{hook.server_port}/events", "secret": "a-secret-of-sixteen+",
                   "events": ["attestation.submitted"], "timeoutSeconds": 10}, f)
    s.attest("plugin", "enable", CAMPUS, "sink", "webhook", "--settings", settings, database_url=owner)
    otlp, spans, lock = otlp_receiver()
    url = f"postgresql://attest_server@{db.host()}/attest"
    environment = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{otlp.server_port}",
                   "OTEL_BSP_SCHEDULE_DELAY": "200", "OTEL_SERVICE_NAME": "attest-trace-test"}
    server, port = s.serve(base, "traced", url, ["--allow-outbound-host", "127.0.0.1"], env=environment)

    body = s.healthy_answers(port, tokens[0])
    status, reply = s.request(port, "POST", f"/v1/campuses/{CAMPUS}/attestations", tokens[0], body,
                              {"traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"})
    s.check(status == 201, f"POST attestations: {status} {reply}")
    s.wait_until("the webhook's delivery", lambda: len(deliveries) == 1, 30)
    _, member, traceparent = deliveries[0]
    s.check(traceparent and traceparent.startswith(f"00-{CALLER_TRACE}-"),
            f"the webhook got traceparent {traceparent!r}, not the submission's trace {CALLER_TRACE}")
    webhook_parent = traceparent.split("-")[2]

    def trace():
        with lock:
            return [span for _, _, _, span in spans if span.trace_id.hex() == CALLER_TRACE]

    def named(name):
        return [span for span in trace() if span.name == name]

    s.wait_until("the delivery's HTTP span", lambda: any(sp.span_id.hex() == webhook_parent for sp in trace()), 30)
    with lock:
        path, content_type, service, _ = spans[0]
    s.check(path == "/v1/traces" and content_type == "application/x-protobuf",
            f"OTLP/HTTP posts to /v1/traces as protobuf: {path} {content_type}")
    s.check(service == "attest-trace-test", f"service.name {service!r} is OTEL_SERVICE_NAME's")

    route = f"POST /v1/campuses/{{campus}}/attestations"
    [request] = named(route) or [None]
    s.check(request is not None, f"no server span {route!r} in {[sp.name for sp in trace()]}")
    s.check(request.kind == trace_pb2.Span.SPAN_KIND_SERVER, "the request's span is a server span")
    s.check(request.parent_span_id.hex() == CALLER_SPAN, "the request's span continues the caller's")
    s.check(attributes(request).get("http.response.status_code") == 201, f"request attributes {attributes(request)}")
    [batch] = named("attestation.batch") or [None]
    s.check(batch is not None and batch.parent_span_id == request.span_id, "the write batch is the request's child")
    pipelines = [sp for sp in named("db.pipeline") if sp.parent_span_id == batch.span_id]
    s.check(pipelines and "INSERT INTO attestations" in attributes(pipelines[0]).get("db.query.text", ""),
            "the batch's pipeline is its child and says what it ran")
    s.check(attributes(pipelines[0]).get("db.system.name") == "postgresql", "db.system.name is postgresql")
    [delivery] = named("outbox.deliver") or [None]
    s.check(delivery is not None and delivery.parent_span_id == request.span_id,
            "the outbox delivery continues the request's trace")
    s.check(delivery.kind == trace_pb2.Span.SPAN_KIND_CONSUMER and attributes(delivery).get("attest.sink") == "webhook",
            f"delivery span {delivery.kind} {attributes(delivery)}")
    [call] = [sp for sp in trace() if sp.span_id.hex() == webhook_parent]
    s.check(call.parent_span_id == delivery.span_id and call.kind == trace_pb2.Span.SPAN_KIND_CLIENT,
            "the webhook's traceparent names the delivery's client span")
    call_attributes = attributes(call)
    s.check(call_attributes.get("url.full") == f"http://127.0.0.1:{hook.server_port}/events"
            and call_attributes.get("http.response.status_code") == 204, f"client span attributes {call_attributes}")
    # Nothing secret or personal in any span: tokens, emails, answers, query strings.
    with lock:
        everything = json.dumps([{**attributes(sp), "name": sp.name} for _, _, _, sp in spans], default=str)
    for secret in [tokens[0], "@north.example.edu", "a-secret-of-sixteen+", member or "no member id"]:
        s.check(secret not in everything, f"a span holds {secret[:12]}…")
    with lock:
        recorded = sorted({f"{sp.name}: {key}" for _, _, _, sp in spans for key in attributes(sp)
                           if key.startswith(("http.request.header", "http.response.header", "url.query", "url.path"))})
    s.check(not recorded, f"spans record a header, a query or a path: {recorded}")
    count = len(trace())
    names = sorted({sp.name for sp in trace()})
    s.log(f"TRACE one submission: {count} spans in trace {CALLER_TRACE}: {', '.join(names)}")

    # Without the variable: no exporter, no spans, and the webhook gets no traceparent.
    server.terminate()
    server.wait(15)
    with lock:
        before = len(spans)
    server, port = s.serve(base, "untraced", url, ["--allow-outbound-host", "127.0.0.1"])
    status, reply = s.request(port, "POST", f"/v1/campuses/{CAMPUS}/attestations", tokens[1], body,
                              {"traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"})
    s.check(status == 201, f"POST attestations without tracing: {status} {reply}")
    s.wait_until("the second delivery", lambda: len(deliveries) == 2, 30)
    s.check(deliveries[1][2] is None, f"without tracing the webhook got traceparent {deliveries[1][2]!r}")
    stored = db.sql("SELECT count(*) FROM notification_outbox WHERE trace_parent IS NOT NULL")
    s.check(stored == "1", f"{stored} outbox rows keep a traceparent; only the traced submission's should")
    time.sleep(1)
    with lock:
        s.check(len(spans) == before, f"{len(spans) - before} spans arrived from the server without OTEL_EXPORTER_OTLP_ENDPOINT")
    s.log("TRACE without OTEL_EXPORTER_OTLP_ENDPOINT: no span sent, no traceparent on the webhook")
    return {"spans": count, "names": names}


if __name__ == "__main__":
    s.run({"submission": submission})
