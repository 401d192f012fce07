"""Benchmarks/tenants.py: the time from an attestation's commit to its webhook's delivery.

    python3 Benchmarks/tenants.py RECEIVER_PORT CAMPUS TOKENS_FILE COUNT SERVER_PORT [SERVER_PORT…]

A webhook receiver on 127.0.0.1:RECEIVER_PORT records when each event arrives; COUNT members
(one token each from TOKENS_FILE, from the top) submit one attestation each, one every 50 ms,
to the servers in turn. A 201 is sent only after the attestation committed, so the time from
the 201's arrival to the event's is the commit's to the delivery's (an upper bound by the
201's own trip). Prints one line: RESULT delivered=… p50_ms=… p99_ms=… max_ms=…
"""
import http.client
import http.server
import json
import sys
import threading
import time

receiver_port, campus, tokens_file, count = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
servers = [int(port) for port in sys.argv[5:]]
arrived = {}
lock = threading.Lock()


class Receiver(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        at = time.monotonic()
        try:
            event = json.loads(body)
            with lock:
                arrived.setdefault(event.get("attestationId"), at)
        except ValueError:
            pass
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


receiver = http.server.ThreadingHTTPServer(("127.0.0.1", receiver_port), Receiver)
threading.Thread(target=receiver.serve_forever, daemon=True).start()

healthy = {name: False for name in ["fever_chills", "cough", "shortness_of_breath", "fatigue", "aches", "headache",
                                    "taste_smell", "sore_throat", "congestion", "nausea", "diarrhea", "close_contact",
                                    "positive_test"]}
body = json.dumps({"surveyVersion": 1, "answers": {**healthy, "temperature": 36.8}})
with open(tokens_file) as lines:
    tokens = [line.strip() for _, line in zip(range(count), lines)]
connections = [http.client.HTTPConnection("127.0.0.1", port, timeout=10) for port in servers]
committed = {}
for index, token in enumerate(tokens):
    connection = connections[index % len(connections)]
    connection.request("POST", f"/v1/campuses/{campus}/attestations", body=body,
                       headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    reply = connection.getresponse()
    text = reply.read()
    at = time.monotonic()
    if reply.status != 201:
        sys.exit(f"a submission was answered {reply.status}: {text[:200]!r}")
    committed[json.loads(text)["id"]] = at
    time.sleep(0.05)
deadline = time.monotonic() + 15
while time.monotonic() < deadline:
    with lock:
        if all(key in arrived for key in committed):
            break
    time.sleep(0.05)
with lock:
    waits = sorted((arrived[key] - at) * 1000 for key, at in committed.items() if key in arrived)
receiver.shutdown()
if not waits:
    sys.exit("no event reached the receiver")


def percentile(p):
    return waits[min(len(waits) - 1, int(p * len(waits)))]


print(f"RESULT delivered={len(waits)} of={len(committed)} p50_ms={percentile(0.5):.1f} p99_ms={percentile(0.99):.1f} max_ms={waits[-1]:.1f}")
