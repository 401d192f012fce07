#!/usr/bin/env python3
"""Benchmarks/soak.py: the mixed load of Benchmarks/soak against a running `attest serve`.

    soak.py PORT SERVER_PID TOKENS_FILE STAFF_TOKEN KEY_FILE SECONDS

Submissions (each member once), badge reads, the 30-day dashboard, badge scans (POST
…/badges/verify with tokens the badge reads got) and sign-ins (RS256 ID tokens signed with
KEY_FILE, whose public half the campus trusts through `attest campus oidc add --jwks-file`),
each at a steady rate, for SECONDS. Every 10 s it samples the server's resident memory
(VmRSS) and each kind's latencies; at the end it prints one line per 10 s window, the slope
of memory after warm-up, and a RESULT line. Exits non-zero on any answer other than the
expected ones (201/200, and 409 for a member who submitted already).
"""
import base64
import http.client
import json
import os
import random
import sys
import threading
import time
import uuid

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding
from cryptography.hazmat.primitives.serialization import load_pem_private_key

CAMPUS = "bench"
ISSUER = "https://idp.soak.example"
AUDIENCE = "soak-client"
# Requests per second of each kind, about 120 in all: a campus of 50,000 at its morning peak
# is nearer 30 submissions a second; this is steady, not a stress test.
RATES = {"submit": 20, "badge": 60, "dashboard": 2, "scan": 20, "signin": 2}
HEALTHY = {q: False for q in ["fever_chills", "cough", "shortness_of_breath", "fatigue", "aches", "headache", "taste_smell",
                              "sore_throat", "congestion", "nausea", "diarrhea", "close_contact", "positive_test"]}


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class Soak:
    def __init__(self, port, pid, tokens, staff, key, seconds):
        self.port, self.pid, self.tokens, self.staff, self.seconds = port, pid, tokens, staff, seconds
        self.key = key
        self.lock = threading.Lock()
        self.window = {}  # kind -> [latency]
        self.statuses = {}  # (kind, status) -> count
        self.unexpected = []
        self.badges = []
        self.next_member = 0
        self.stop = threading.Event()
        self.windows = []

    def connection(self, source="127.0.0.1"):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=30, source_address=(source, 0))

    def call(self, connection, kind, method, path, token=None, body=None, expected=(200,)):
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        if body is not None:
            headers["Content-Type"] = "application/json"
        started = time.monotonic()
        try:
            connection.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
            response = connection.getresponse()
            data = response.read()
            status = response.status
        except Exception as error:
            status, data = f"error {type(error).__name__}", b""
            connection.close()
        took = time.monotonic() - started
        with self.lock:
            self.window.setdefault(kind, []).append(took)
            self.statuses[(kind, status)] = self.statuses.get((kind, status), 0) + 1
            if status not in expected:
                self.unexpected.append((kind, status, data[:200]))
        return status, data

    def paced(self, kind, step, share=1):
        interval = share / RATES[kind]
        def run():
            connection = self.connection()
            next_at = time.monotonic()
            while not self.stop.is_set():
                step(connection)
                next_at += interval
                delay = next_at - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                else:
                    next_at = time.monotonic()
        return threading.Thread(target=run, daemon=True)

    def submit(self, connection):
        with self.lock:
            index = self.next_member
            self.next_member += 1
        token = self.tokens[index % len(self.tokens)]
        self.call(connection, "submit", "POST", f"/v1/campuses/{CAMPUS}/attestations", token,
                  {"surveyVersion": 1, "answers": HEALTHY}, expected=(201, 409))

    def badge(self, connection):
        with self.lock:
            done = max(1, min(self.next_member, len(self.tokens)))
        token = self.tokens[random.randrange(done)]
        status, data = self.call(connection, "badge", "GET", f"/v1/campuses/{CAMPUS}/me/badge", token)
        if status == 200:
            badge = json.loads(data).get("token")
            if badge:
                with self.lock:
                    if len(self.badges) < 5000:
                        self.badges.append(badge)
                    else:
                        self.badges[random.randrange(5000)] = badge

    def dashboard(self, connection):
        today = time.strftime("%Y-%m-%d", time.gmtime(time.time() - 5 * 3600))
        start = time.strftime("%Y-%m-%d", time.gmtime(time.time() - 5 * 3600 - 29 * 86400))
        self.call(connection, "dashboard", "GET", f"/v1/campuses/{CAMPUS}/admin/dashboard?from={start}&to={today}", self.staff)

    def scan(self, connection):
        with self.lock:
            badge = random.choice(self.badges) if self.badges else None
        if badge:
            self.call(connection, "scan", "POST", f"/v1/campuses/{CAMPUS}/badges/verify", self.staff, {"token": badge})

    def signin(self, connection):
        # From one of 200 loopback addresses in turn: sign-ins are limited per address.
        source = f"127.0.1.{random.randrange(1, 201)}"
        now = int(time.time())
        member = random.randrange(1, len(self.tokens) + 1)
        header = {"alg": "RS256", "typ": "JWT", "kid": "soak"}
        claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": f"member{member}", "email": f"member{member}@bench.example.edu",
                  "email_verified": True, "iat": now, "exp": now + 300, "jti": str(uuid.uuid4()), "name": f"Member {member}"}
        signing = b64(json.dumps(header).encode()) + "." + b64(json.dumps(claims).encode())
        signature = self.key.sign(signing.encode(), padding.PKCS1v15(), hashes.SHA256())
        fresh = self.connection(source)
        status, _ = self.call(fresh, "signin", "POST", f"/v1/campuses/{CAMPUS}/sessions", None,
                              {"idToken": signing + "." + b64(signature)}, expected=(200, 201))
        fresh.close()

    def memory(self):
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) // 1024
        return 0

    def run(self):
        # Two badge readers share the badge rate.
        threads = [self.paced("submit", self.submit), self.paced("badge", self.badge, 2), self.paced("badge", self.badge, 2),
                   self.paced("dashboard", self.dashboard), self.paced("scan", self.scan), self.paced("signin", self.signin)]
        for thread in threads:
            thread.start()
        started = time.monotonic()
        while time.monotonic() - started < self.seconds:
            time.sleep(10)
            with self.lock:
                window, self.window = self.window, {}
            figures = {"t": round(time.monotonic() - started), "rssMB": self.memory()}
            for kind, values in sorted(window.items()):
                values.sort()
                figures[kind] = {"n": len(values), "p99Ms": round(values[min(len(values) - 1, int(0.99 * len(values)))] * 1000, 1)}
            self.windows.append(figures)
            print("WINDOW " + json.dumps(figures), flush=True)
        self.stop.set()
        for thread in threads:
            thread.join(30)


def slope(points):
    """Least-squares slope of (t, y)."""
    n = len(points)
    if n < 2:
        return 0.0
    mean_t = sum(t for t, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    var = sum((t - mean_t) ** 2 for t, _ in points)
    return sum((t - mean_t) * (y - mean_y) for t, y in points) / var if var else 0.0


def main():
    port, pid, tokens_file, staff, key_file, seconds = sys.argv[1:7]
    with open(tokens_file) as f:
        tokens = [line.strip() for line in f if line.strip()]
    with open(key_file, "rb") as f:
        key = load_pem_private_key(f.read(), password=None)
    soak = Soak(int(port), int(pid), tokens, staff, key, int(seconds))
    soak.run()
    # After warm-up: the first 5 minutes (or the first fifth of a shorter run) are left out.
    warm = min(300, int(seconds) // 5)
    settled = [(w["t"], w["rssMB"]) for w in soak.windows if w["t"] > warm]
    per_hour = slope(settled) * 3600
    p99s = {kind: [w[kind]["p99Ms"] for w in soak.windows if kind in w and w["t"] > warm] for kind in RATES}
    summary = {
        "seconds": int(seconds), "requests": sum(soak.statuses.values()),
        "statuses": {f"{k} {s}": n for (k, s), n in sorted(soak.statuses.items(), key=str)},
        "rssFirstMB": settled[0][1] if settled else None, "rssLastMB": settled[-1][1] if settled else None,
        "rssPeakMB": max((w["rssMB"] for w in soak.windows), default=None), "rssSlopeMBPerHour": round(per_hour, 2),
        "p99MsWorstWindow": {kind: max(v) for kind, v in p99s.items() if v},
        "p99MsMedianWindow": {kind: sorted(v)[len(v) // 2] for kind, v in p99s.items() if v},
        "unexpected": len(soak.unexpected),
    }
    print("RESULT soak " + json.dumps(summary), flush=True)
    if soak.unexpected:
        print("unexpected answers (first 10): " + repr(soak.unexpected[:10]))
        sys.exit(1)


if __name__ == "__main__":
    main()
