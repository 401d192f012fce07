#!/usr/bin/env python3
"""Campus Attest scaled out, with real engines on loopback (issue 32).

    scaleout.py replica    a primary and a streaming standby made with pg_basebackup;
                           DATABASE_READ_URL, then the standby promoted under load
    scaleout.py servers    two `attest serve` behind nginx (deploy/nginx.conf): submissions,
                           the outbox and reminders exactly once, revocations across servers,
                           a rolling restart under load
    scaleout.py patroni    etcd and two Patroni-managed PostgreSQL nodes (deploy/patroni/),
                           the primary's postmaster killed with SIGKILL under load

Environment: ATTEST_BINARY (the `attest` executable), ATTEST_PG_BIN (PostgreSQL's bin
directory). Each scenario prints its figures and exits non-zero on the first failed check.
Run by Tests/AttestServerTests/ScaleOutTests.swift; everything it starts is stopped at exit.
"""
import datetime
import http.client
import http.server
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid

import yaml
import zoneinfo

ATTEST = os.environ["ATTEST_BINARY"]
PG_BIN = os.environ["ATTEST_PG_BIN"]
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
AS_ROOT = os.getuid() == 0
CAMPUS = "north"
KEK = subprocess.run([ATTEST, "keys", "new-kek"], capture_output=True, text=True, check=True).stdout.strip()
children = []  # every process started, stopped at exit


def log(message):
    print(message, flush=True)


def check(condition, message):
    if not condition:
        raise AssertionError(message)


class Receiving(http.server.ThreadingHTTPServer):
    """A webhook receiver's HTTP server, with a web server's listen backlog. Python's default
    of 5 overflows when the outbox sends a campus's 32 due events at once; the kernel then
    drops the connection's last handshake packet and retries it after 1, 3, 7 s, all counted
    against the sender's timeout, so a delivery the receiver recorded could be answered too
    late and sent again (it failed CI once: a 5 s receiver, a 10 s timeout)."""
    daemon_threads = True
    request_queue_size = 128


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(argv, logfile, env=None, user=None, cwd=None):
    """Starts a process in the background; with `user`, as that user (when running as root),
    in `cwd`: PostgreSQL's programs refuse a working directory their user cannot enter (CI's
    clone is private to root)."""
    full = (["runuser", "-u", user, "--"] if user and AS_ROOT else []) + argv
    out = open(logfile, "ab")
    process = subprocess.Popen(full, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})},
                               start_new_session=True, cwd=cwd)
    children.append(process)
    return process


def wait_until(what, predicate, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if predicate():
                return
        except Exception:
            pass
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


class Postgres:
    """A cluster of its own in `base/name`, on 127.0.0.1:port and a socket in its directory."""

    def __init__(self, base, name, port):
        self.dir = os.path.join(base, name)
        self.data = os.path.join(self.dir, "data")
        self.port = port
        os.makedirs(self.dir, exist_ok=True)
        if AS_ROOT:
            shutil.chown(self.dir, "postgres", "postgres")

    def pg(self, tool, *args, check_status=True):
        argv = (["runuser", "-u", "postgres", "--", "env", "-C", self.dir] if AS_ROOT else []) + [os.path.join(PG_BIN, tool), *args]
        result = subprocess.run(argv, capture_output=True, text=True)
        if check_status and result.returncode != 0:
            raise RuntimeError(f"{tool} {' '.join(args)}: {result.stderr.strip()}")
        return result

    def initdb(self, settings):
        self.pg("initdb", "-D", self.data, "-U", "postgres", "-E", "UTF8", "--locale=C", "--auth-local=trust",
                "--auth-host=trust", "--no-sync", "--no-instructions")
        self.configure(settings)

    def configure(self, settings):
        with open(os.path.join(self.data, "postgresql.conf"), "a") as conf:
            for key, value in {"listen_addresses": "'127.0.0.1'", "port": self.port, "unix_socket_directories": f"'{self.dir}'",
                               "fsync": "off", "max_connections": 100, **settings}.items():
                conf.write(f"{key} = {value}\n")
        with open(os.path.join(self.data, "pg_hba.conf"), "a") as hba:
            hba.write("host replication all 127.0.0.1/32 trust\n")

    def basebackup(self, primary):
        self.pg("pg_basebackup", "-h", "127.0.0.1", "-p", str(primary.port), "-U", "postgres", "-D", self.data, "-R",
                "-X", "stream", "--checkpoint=fast")
        self.configure({})

    def start(self):
        self.pg("pg_ctl", "start", "-w", "-D", self.data, "-l", os.path.join(self.dir, "postgres.log"))

    def stop(self, mode="fast"):
        self.pg("pg_ctl", "stop", "-w", "-D", self.data, "-m", mode, check_status=False)

    def promote(self):
        self.pg("pg_ctl", "promote", "-w", "-D", self.data)

    def postmaster(self):
        with open(os.path.join(self.data, "postmaster.pid")) as f:
            return int(f.readline())

    def sql(self, statement, database="attest"):
        result = subprocess.run(["psql", "-X", "-At", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", str(self.port),
                                 "-U", "postgres", "-d", database, "-c", statement], capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"psql on {self.port}: {result.stderr.strip()}")
        return result.stdout.strip()

    def host(self):
        return f"127.0.0.1:{self.port}"


def attest(*args, database_url, check_status=True):
    result = subprocess.run([ATTEST, *args, "--log-level", "warning"], capture_output=True, text=True,
                            env={**os.environ, "DATABASE_URL": database_url, "ATTEST_KEK": KEK})
    if check_status and result.returncode != 0:
        raise RuntimeError(f"attest {' '.join(args)}: {result.stderr.strip()}")
    return result.stdout.strip()


def prepare_campus(primary, members):
    """Schema, the server's login, a campus with the demo survey, `members` members with a
    session token each (in the server's own format, seeded in SQL), and an admin."""
    owner = f"postgresql://postgres@{primary.host()}/attest"
    attest("migrate", "--server-login", "attest_server", database_url=owner)
    attest("campus", "create", CAMPUS, "--name", "North", "--timezone", "America/New_York", database_url=owner)
    attest("survey", "publish", CAMPUS, "--demo", database_url=owner)
    primary.sql(f"""
        WITH added AS (
            INSERT INTO users (campus_id, id, email, display_name)
            SELECT c.id, gen_random_uuid(), 'm' || g || '@north.example.edu', 'Member ' || g
            FROM campuses c, generate_series(1, {members}) AS g WHERE c.slug = '{CAMPUS}'
            RETURNING campus_id, created_at
        )
        INSERT INTO member_changes AS m (campus_id, local_date, change)
        SELECT a.campus_id, (a.created_at AT TIME ZONE c.time_zone)::date, count(*) FROM added a JOIN campuses c ON c.id = a.campus_id
        GROUP BY 1, 2 ON CONFLICT (campus_id, local_date) DO UPDATE SET change = m.change + EXCLUDED.change""")
    tokens = primary.sql(f"""
        WITH t AS (
            SELECT campus_id, id AS user_id,
                   translate(encode(decode(md5(random()::text || id::text) || md5(id::text || random()::text), 'hex'), 'base64'),
                             '+/=', '-_') AS token
            FROM users WHERE campus_id = (SELECT id FROM campuses WHERE slug = '{CAMPUS}')
        ), s AS (
            INSERT INTO sessions (campus_id, token_hash, user_id, expires_at)
            SELECT campus_id, sha256(convert_to(token, 'UTF8')), user_id, now() + interval '1 day' FROM t
        )
        SELECT token FROM t""").split("\n")
    attest("user", "add", CAMPUS, "admin@north.example.edu", database_url=owner)
    attest("role", "grant", CAMPUS, "admin@north.example.edu", "admin", database_url=owner)
    admin = attest("token", "issue", CAMPUS, "admin@north.example.edu", database_url=owner)
    return tokens, admin


def campus_database(base, members, name="db", settings=None, cls=None):
    """A cluster of its own on a loopback port with the database `attest` and
    `prepare_campus`'s campus: (the cluster, the members' tokens, the admin's)."""
    db = (cls or Postgres)(base, name, free_port())
    db.initdb(settings or {})
    db.start()
    db.sql("CREATE DATABASE attest", database="postgres")
    tokens, admin = prepare_campus(db, members)
    return db, tokens, admin


def serve(base, name, database_url, extra=(), read_url=None, port=None, env=None):
    port = port or free_port()
    env = {"DATABASE_URL": database_url, "ATTEST_KEK": KEK, **(env or {})}
    if read_url:
        env["DATABASE_READ_URL"] = read_url
    process = start([ATTEST, "serve", "--port", str(port), "--log-format", "json", "--log-level", "warning", *extra],
                    os.path.join(base, f"{name}.log"), env=env)
    wait_until(f"{name} on port {port}", lambda: request(port, "GET", "/readyz")[0] == 200, 30)
    return process, port


def request(port, method, path, token=None, body=None, headers=None, timeout=10):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        all_headers = dict(headers or {})
        if token:
            all_headers["Authorization"] = f"Bearer {token}"
        if body is not None:
            all_headers["Content-Type"] = "application/json"
        connection.request(method, path, body=None if body is None else json.dumps(body), headers=all_headers)
        response = connection.getresponse()
        data = response.read()
        return response.status, (json.loads(data) if data and "json" in response.getheader("Content-Type", "") else data)
    finally:
        connection.close()


def healthy_answers(port, token):
    status, survey = request(port, "GET", f"/v1/campuses/{CAMPUS}/survey", token)
    check(status == 200, f"GET survey: {status} {survey}")
    return {"surveyVersion": survey["version"],
            "answers": {q["id"]: False for q in survey["questions"] if q["kind"] == "boolean"}}


class Load:
    """Clients submitting each member's attestation once, with an Idempotency-Key each,
    retrying the same key until acknowledged; every acknowledged id is logged."""

    def __init__(self, ports, tokens, body, clients=16):
        self.ports, self.tokens, self.body, self.clients = ports, tokens, body, clients
        self.acknowledged = {}  # member index -> attestation id (from its 201)
        self.lock = threading.Lock()
        self.sent = 0
        self.failures = 0  # 503s and connection errors, each retried
        self.refusals = {}  # status (None: no answer) -> count
        self.other = []  # any other status: a failed check
        self.last_failure = None
        self.first_success_after = {}
        self.next = 0
        self.paused = threading.Event()
        self.stop = threading.Event()
        self.threads = []

    def submit_all(self, indices, pace=0.0):
        self.queue = list(indices)
        self.threads = [threading.Thread(target=self.client, args=(pace,), daemon=True) for _ in range(self.clients)]
        for thread in self.threads:
            thread.start()

    def take(self):
        with self.lock:
            if self.next >= len(self.queue):
                return None
            index = self.queue[self.next]
            self.next += 1
            return index

    def client(self, pace):
        while not self.stop.is_set():
            index = self.take()
            if index is None:
                return
            key = f"scale-{index}"
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                port = self.ports[index % len(self.ports)]
                with self.lock:
                    self.sent += 1
                try:
                    status, reply = request(port, "POST", f"/v1/campuses/{CAMPUS}/attestations", self.tokens[index], self.body,
                                            {"Idempotency-Key": key}, timeout=15)
                except (OSError, http.client.HTTPException):
                    status, reply = None, None
                if status in (200, 201):
                    with self.lock:
                        self.acknowledged[index] = reply["id"].lower()
                    break
                with self.lock:
                    if status in (None, 502, 503, 504):
                        self.failures += 1
                        self.refusals[status] = self.refusals.get(status, 0) + 1
                        self.last_failure = time.monotonic()
                    else:
                        self.other.append((index, status, reply))
                        break
                time.sleep(0.05)
            if pace:
                time.sleep(pace)

    def join(self, timeout=180):
        for thread in self.threads:
            thread.join(timeout)
        check(not any(t.is_alive() for t in self.threads), "the load's clients did not finish")
        check(not self.other, f"answers other than 201, 502, 503 or 504: {self.other[:3]}")


def served_submissions(port):
    """POST …/attestations answered 201 by the server on `port`, from its /metrics."""
    status, text = request(port, "GET", "/metrics")
    total = 0
    for line in text.decode().splitlines():
        if line.startswith("attest_http_requests_total{") and 'method="POST"' in line and "attestations" in line and 'status="201"' in line:
            total += int(float(line.rsplit(" ", 1)[1]))
    return total


def next_index_in_flight(load):
    """Whether the load still had members to submit (so the restarts happened under load)."""
    with load.lock:
        return load.next < len(load.queue)


def verify_stored(primary, load, expected):
    """Every acknowledged attestation is in the table, once; nothing else is."""
    rows = primary.sql(f"""
        SELECT u.email, a.id FROM attestations a JOIN users u ON u.id = a.user_id AND u.campus_id = a.campus_id
        WHERE u.email LIKE 'm%@north.example.edu'""").split("\n")
    stored = {}
    duplicates = 0
    for row in filter(None, rows):
        email, identifier = row.split("|")
        index = int(email[1:email.index("@")]) - 1
        if index in stored:
            duplicates += 1
        stored[index] = identifier.lower()
    lost = [i for i, identifier in load.acknowledged.items() if stored.get(i) != identifier]
    figures = {"acknowledged": len(load.acknowledged), "stored": len(stored), "lost": len(lost),
               "duplicates": duplicates, "requests": load.sent, "retried": load.failures}
    log("  " + ", ".join(f"{k} {v}" for k, v in figures.items()))
    check(len(load.acknowledged) == expected, f"{expected} members should each have been acknowledged once, got {len(load.acknowledged)}")
    check(not lost, f"acknowledged but not stored: {lost[:5]}")
    check(duplicates == 0, f"{duplicates} members stored twice")
    check(len(stored) == expected, f"{len(stored)} stored, {expected} submitted")
    return figures


def campus_today():
    """The campus's local date (America/New_York), which is what its days are."""
    return datetime.datetime.now(zoneinfo.ZoneInfo("America/New_York")).strftime("%Y-%m-%d")


def dashboard(port, admin):
    today = campus_today()
    status, reply = request(port, "GET", f"/v1/campuses/{CAMPUS}/admin/dashboard?from={today}&to={today}", admin)
    check(status == 200, f"dashboard: {status} {reply}")
    return reply


def submitted_today(dash):
    return sum(day["submitted"] for day in dash["days"])


def wait_caught_up(primary, standby):
    target = primary.sql("SELECT pg_current_wal_lsn()")
    wait_until("the standby's replay", lambda: standby.sql(f"SELECT pg_last_wal_replay_lsn() >= '{target}'::pg_lsn") == "t", 30)


# MARK: Scenarios

def replica(base):
    primary = Postgres(base, "primary", free_port())
    primary.initdb({"wal_level": "replica", "max_wal_senders": 5, "synchronous_commit": "on"})
    primary.start()
    primary.sql("CREATE DATABASE attest", database="postgres")
    tokens, admin = prepare_campus(primary, 600)
    standby = Postgres(base, "standby", free_port())
    standby.basebackup(primary)
    standby.start()
    wait_until("streaming replication", lambda: primary.sql("SELECT state FROM pg_stat_replication", "postgres") == "streaming", 30)
    # Synchronous from here on: a commit is acknowledged once the standby has flushed it.
    primary.sql("ALTER SYSTEM SET synchronous_standby_names = '*'", "postgres")
    primary.sql("SELECT pg_reload_conf()", "postgres")
    wait_until("a synchronous standby", lambda: primary.sql("SELECT sync_state FROM pg_stat_replication", "postgres") == "sync", 30)
    log(f"primary {primary.host()}, standby {standby.host()} (pg_basebackup, streaming, synchronous)")

    hosts = f"{primary.host()},{standby.host()}"
    url = f"postgresql://attest_server@{hosts}/attest?target_session_attrs=read-write&connect_timeout=2"
    read_url = f"postgresql://attest_server@{standby.host()}/attest?connect_timeout=2"
    server, port = serve(base, "server", url, read_url=read_url)
    body = healthy_answers(port, tokens[0])

    # 1. Reads from the standby: with its replay paused, the dashboard lags; resumed, it equals the primary.
    first = Load([port], tokens, body)
    first.submit_all(range(0, 200))
    first.join()
    wait_caught_up(primary, standby)
    caught_up = submitted_today(dashboard(port, admin))
    check(caught_up == 200, f"the dashboard after catch-up shows {caught_up}, not 200")
    standby.sql("SELECT pg_wal_replay_pause()")
    second = Load([port], tokens, body)
    second.submit_all(range(200, 300))
    second.join()
    stale = submitted_today(dashboard(port, admin))
    on_primary = int(primary.sql("SELECT sum(submitted) FROM daily_stats"))
    check(stale == 200 and on_primary == 300, f"with replay paused the dashboard should show the standby's 200, not the primary's {on_primary}: {stale}")
    standby.sql("SELECT pg_wal_replay_resume()")
    wait_caught_up(primary, standby)
    fresh = dashboard(port, admin)
    check(submitted_today(fresh) == 300, f"after catch-up the dashboard shows {submitted_today(fresh)}, the primary 300")
    log(f"  dashboard from the standby: 200 while its replay was paused (primary 300), 300 after catch-up")

    # 2. The primary crashes under load; the standby is promoted; the server finds it by itself.
    load = Load([port], tokens, body, clients=8)
    load.submit_all(range(300, 600), pace=0.01)
    wait_until("submissions under way", lambda: len(load.acknowledged) >= 50, 30)
    crashed = time.monotonic()
    primary.stop("immediate")
    time.sleep(1)
    standby.promote()
    promoted = time.monotonic()
    load.join()
    outage = (load.last_failure - crashed) if load.last_failure else 0.0
    second.acknowledged.update(first.acknowledged)
    load.acknowledged.update(second.acknowledged)
    load.sent += first.sent + second.sent  # the figures count every request of the scenario
    figures = verify_stored(standby, load, 600)
    log(f"  primary stopped (-m immediate), standby promoted {promoted - crashed:.1f} s later; "
        f"last refused submission {outage:.1f} s after the crash")
    figures.update(withoutServiceSeconds=round(max(outage, 0), 1))
    check(submitted_today(dashboard(port, admin)) == 600, "the dashboard from the promoted standby")
    server.send_signal(signal.SIGTERM)
    check(server.wait(20) == 0, "the server did not stop cleanly")
    return figures


def servers(base):
    database = Postgres(base, "db", free_port())
    database.initdb({})
    database.start()
    database.sql("CREATE DATABASE attest", database="postgres")
    tokens, admin = prepare_campus(database, 800)
    owner = f"postgresql://postgres@{database.host()}/attest"

    # A webhook receiver that counts deliveries by event id; both servers deliver to it.
    deliveries = {}
    lock = threading.Lock()

    class Receiver(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            event = json.loads(body).get("event")
            with lock:
                deliveries.setdefault(self.headers["Idempotency-Key"], []).append(event)
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    receiver = Receiving(("127.0.0.1", 0), Receiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    settings = json.dumps({"url": f"http://127.0.0.1:{receiver.server_port}/events", "secret": "a-secret-of-sixteen+",
                           "events": ["attestation.submitted", "reminder.due"]})
    settings_file = os.path.join(base, "webhook.json")
    with open(settings_file, "w") as f:
        f.write(settings)
    attest("plugin", "enable", CAMPUS, "sink", "webhook", "--settings", settings_file, database_url=owner)
    # Not due until the submissions are in (unless the test runs in New York's last minute).
    attest("campus", "set", CAMPUS, "reminder", "23:59", database_url=owner)
    reminder_due_already = datetime.datetime.now(zoneinfo.ZoneInfo("America/New_York")).strftime("%H:%M") >= "23:59"
    url = f"postgresql://attest_server@{database.host()}/attest"
    extra = ["--trusted-proxy", "127.0.0.1", "--allow-outbound-host", "127.0.0.1"]
    one, port_one = serve(base, "server-1", url, extra)
    two, port_two = serve(base, "server-2", url, extra)

    # nginx in front, from deploy/nginx.conf with loopback addresses.
    proxy_port = free_port()
    with open(os.path.join(REPO, "deploy", "nginx.conf")) as f:
        conf = f.read()
    conf = (conf.replace("attest-1:8080", f"127.0.0.1:{port_one}").replace("attest-2:8080", f"127.0.0.1:{port_two}")
            .replace("listen 80;", f"listen 127.0.0.1:{proxy_port};").replace("/tmp/attest-nginx", os.path.join(base, "nginx")))
    conf_path = os.path.join(base, "nginx.conf")
    with open(conf_path, "w") as f:
        f.write(conf)
    start(["nginx", "-c", conf_path, "-p", base, "-g", "daemon off;"], os.path.join(base, "nginx.log"))
    wait_until("nginx", lambda: request(proxy_port, "GET", "/readyz")[0] == 200, 10)
    log(f"servers on {port_one} and {port_two}, nginx on {proxy_port}")
    body = healthy_answers(proxy_port, tokens[0])

    # 1. Submissions through nginx and through each server directly.
    load = Load([proxy_port, port_one, port_two], tokens, body)
    load.submit_all(range(0, 400))
    load.join()
    check(load.failures == 0, f"{load.failures} submissions refused with nothing wrong")

    # 2. Revocations seen by the other server at its next read of the sign-in generations (every second).
    member = tokens[0]
    check(request(port_two, "GET", f"/v1/campuses/{CAMPUS}/me", member)[0] == 200, "the member on server 2")
    status, _ = request(port_one, "DELETE", f"/v1/campuses/{CAMPUS}/sessions/current", member)
    check(status in (200, 204), f"sign-out on server 1: {status}")
    signed_out = time.monotonic()
    wait_until("server 2 to refuse the signed-out token", lambda: request(port_two, "GET", f"/v1/campuses/{CAMPUS}/me", member)[0] == 401, 10)
    sign_out_seconds = time.monotonic() - signed_out
    check(submitted_today(dashboard(port_two, admin)) == 400, "the admin on server 2 sees the 400 submissions")
    attest("role", "revoke", CAMPUS, "admin@north.example.edu", "admin", database_url=owner)
    revoked = time.monotonic()
    today = campus_today()
    for port in (port_one, port_two):
        wait_until(f"server on {port} to refuse the revoked admin",
                   lambda: request(port, "GET", f"/v1/campuses/{CAMPUS}/admin/dashboard?from={today}&to={today}", admin)[0] == 403, 10)
    revoke_seconds = time.monotonic() - revoked
    check(sign_out_seconds <= 3 and revoke_seconds <= 3, f"revocations took {sign_out_seconds:.1f} and {revoke_seconds:.1f} s (bound: about 1 s, the sign-in generations read every second)")
    log(f"  sign-out on server 1 refused by server 2 after {sign_out_seconds:.1f} s; a role revoked by the CLI refused by both after {revoke_seconds:.1f} s")

    # 3. A rolling restart under load: server 1 gets SIGTERM, then comes back; server 2 likewise.
    load2 = Load([proxy_port], tokens, body, clients=4)
    load2.submit_all(range(400, 800), pace=0.3)  # about 30 s of submissions
    wait_until("submissions under way", lambda: len(load2.acknowledged) >= 30, 30)
    restarts = []
    for name, process, port in (("server-1", one, port_one), ("server-2", two, port_two)):
        before = len(load2.acknowledged)
        process.send_signal(signal.SIGTERM)
        check(process.wait(30) == 0, f"{name} did not stop gracefully")
        time.sleep(1)  # nginx sends everything to the other server meanwhile
        replacement, _ = serve(base, name + "-again", url, extra, port=port)
        restarts.append((name, len(load2.acknowledged) - before))
        if name == "server-1":
            one = replacement
        else:
            two = replacement
        # The next one stops only once nginx sends this one submissions again (after its
        # fail_timeout): deploy/README.md's rolling-restart rule.
        wait_until(f"{name} back in nginx's rotation", lambda: served_submissions(port) > 0, 30)
    check(next_index_in_flight(load2), "the load ended before the restarts: too few submissions to observe them")
    load2.join()
    log(f"  rolling restart through nginx: refused meanwhile {load2.refusals} (each retried with its key)")
    load.acknowledged.update(load2.acknowledged)
    load.sent += load2.sent
    load.failures += load2.failures
    figures = verify_stored(database, load, 800)

    # 4. The outbox: every event delivered once, whichever server wrote or sent it; reminders
    #    claimed once per member and day by whichever server came first.
    attest("campus", "set", CAMPUS, "reminder", "00:00", database_url=owner)
    wait_until("every event delivered", lambda: int(database.sql(
        "SELECT count(*) FROM notification_outbox WHERE delivered_at IS NULL")) == 0 and len(deliveries) >= 800, 60)
    wait_until("the reminders written", lambda: int(database.sql("SELECT count(*) FROM reminder_runs")) == 1, 60)
    reminders = int(database.sql("SELECT count(*) FROM notification_outbox WHERE event = 'reminder.due'"))
    per_member = int(database.sql(
        "SELECT coalesce(max(n), 0) FROM (SELECT count(*) AS n FROM notification_outbox WHERE event = 'reminder.due' "
        "GROUP BY payload ->> 'userId') r"))
    expected_reminders = int(database.sql(
        "SELECT count(*) FROM users u WHERE active AND NOT EXISTS (SELECT 1 FROM attestations a WHERE a.user_id = u.id)"))
    wait_until("the reminders delivered", lambda: sum(1 for e in deliveries.values() if e[0] == "reminder.due") == reminders, 60)
    with lock:
        twice = {k: v for k, v in deliveries.items() if len(v) > 1}
        submitted = sum(1 for v in deliveries.values() if v[0] == "attestation.submitted")
    check(not twice, f"delivered more than once: {list(twice.items())[:3]}")
    check(submitted == 800, f"{submitted} attestation.submitted events delivered, 800 expected")
    runs = int(database.sql("SELECT count(*) FROM reminder_runs"))
    check(runs == 1 and per_member == 1, f"reminder runs {runs}, at most {per_member} reminders per member (expected 1 and 1)")
    check(reminder_due_already or reminders == expected_reminders,
          f"{reminders} reminders, {expected_reminders} members had not submitted")
    log(f"  outbox: {submitted} submissions and {reminders} reminders delivered once each by two servers")
    figures.update(signOutSeconds=round(sign_out_seconds, 1), revokeSeconds=round(revoke_seconds, 1))
    receiver.shutdown()
    return figures


def patroni(base):
    etcd_client, etcd_peer = free_port(), free_port()
    start(["etcd", "--name", "attest-etcd", "--data-dir", os.path.join(base, "etcd"),
           "--listen-client-urls", f"http://127.0.0.1:{etcd_client}", "--advertise-client-urls", f"http://127.0.0.1:{etcd_client}",
           "--listen-peer-urls", f"http://127.0.0.1:{etcd_peer}", "--initial-advertise-peer-urls", f"http://127.0.0.1:{etcd_peer}",
           "--initial-cluster", f"attest-etcd=http://127.0.0.1:{etcd_peer}"], os.path.join(base, "etcd.log"))
    wait_until("etcd", lambda: request(etcd_client, "GET", "/health")[0] == 200, 30)
    with open(os.path.join(REPO, "deploy", "patroni", "patroni.yml")) as f:
        template = f.read()
    nodes = []
    for name in ("node1", "node2"):
        node = {"name": name, "pg": free_port(), "api": free_port(), "dir": os.path.join(base, name)}
        os.makedirs(node["dir"])
        if AS_ROOT:
            shutil.chown(node["dir"], "postgres", "postgres")
        conf = yaml.safe_load(template)
        conf["name"] = name
        conf["etcd3"]["hosts"] = f"127.0.0.1:{etcd_client}"
        conf["restapi"] = {"listen": f"127.0.0.1:{node['api']}", "connect_address": f"127.0.0.1:{node['api']}"}
        trust = ["local all all trust", "host replication replicator 127.0.0.1/32 trust", "host all all 127.0.0.1/32 trust"]
        conf["bootstrap"]["pg_hba"] = trust
        # A test cluster: no fsync (initdb's alone took over a minute on a busy CI machine).
        conf["bootstrap"]["initdb"].append("no-sync")
        conf["bootstrap"]["dcs"]["postgresql"]["parameters"]["fsync"] = "off"
        postgresql = conf["postgresql"]
        postgresql.update(listen=f"127.0.0.1:{node['pg']}", connect_address=f"127.0.0.1:{node['pg']}", data_dir=node["dir"] + "/data",
                          bin_dir=PG_BIN, pgpass=node["dir"] + "/pgpass", pg_hba=trust)
        postgresql["parameters"]["unix_socket_directories"] = node["dir"]
        for account in postgresql["authentication"].values():
            account.pop("password", None)
        conf = yaml.safe_dump(conf)
        path = os.path.join(node["dir"], "patroni.yml")
        with open(path, "w") as f:
            f.write(conf)
        if AS_ROOT:
            shutil.chown(path, "postgres", "postgres")
        node["process"] = start(["patroni", path], os.path.join(base, f"{name}.log"), user="postgres", cwd=node["dir"])
        nodes.append(node)
        if name == "node1":
            wait_until("node1 to lead", lambda: request(node["api"], "GET", "/primary")[0] == 200, 180)

    def role(node):
        status, reply = request(node["api"], "GET", "/patroni", timeout=2)
        return reply.get("role") if status == 200 else None

    wait_until("a synchronous standby", lambda: request(nodes[0]["api"], "GET", "/cluster", timeout=2)[1] and any(
        m.get("role") == "sync_standby" for m in request(nodes[0]["api"], "GET", "/cluster", timeout=2)[1]["members"]), 180)
    leader = Postgres(base, "node1", nodes[0]["pg"])
    leader.sql("CREATE DATABASE attest", database="postgres")
    tokens, admin = prepare_campus(leader, 600)
    log(f"etcd {etcd_client}; patroni node1 (leader) pg {nodes[0]['pg']}, node2 (sync standby) pg {nodes[1]['pg']}")
    hosts = ",".join(f"127.0.0.1:{n['pg']}" for n in nodes)
    server, port = serve(base, "server", f"postgresql://attest_server@{hosts}/attest?target_session_attrs=read-write&connect_timeout=2")
    body = healthy_answers(port, tokens[0])
    load = Load([port], tokens, body, clients=8)
    load.submit_all(range(0, 600), pace=0.01)
    wait_until("submissions under way", lambda: len(load.acknowledged) >= 100, 30)
    before = len(load.acknowledged)
    killed = time.monotonic()
    os.kill(leader.postmaster(), signal.SIGKILL)
    wait_until("node2 to be promoted", lambda: role(nodes[1]) in ("master", "primary"), 90)
    promoted = time.monotonic() - killed
    wait_until("a submission acknowledged after the failover", lambda: len(load.acknowledged) > before + 20, 60)
    load.join()
    survivor = Postgres(base, "node2", nodes[1]["pg"])
    figures = verify_stored(survivor, load, 600)
    outage = (load.last_failure - killed) if load.last_failure else 0.0
    figures.update(promotedAfterSeconds=round(promoted, 1), withoutServiceSeconds=round(max(outage, 0), 1))
    log(f"  leader's postmaster SIGKILLed; node2 promoted after {promoted:.1f} s; submissions refused for {outage:.1f} s")
    server.send_signal(signal.SIGTERM)
    server.wait(20)
    return figures


def run(scenarios, not_run=()):
    """Runs the scenario named on the command line in a fresh directory under /tmp: prints its
    RESULT line (or, for an exception of a `not_run` type, NOT RUN and the reason), the end of
    every log on failure, and stops everything it started however it ends. Shared by
    faults.py and hostile.py."""
    # Stopped from outside (a test's timeout): stop everything started, as on any failure.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    scenario = sys.argv[1] if len(sys.argv) > 1 else ""
    if scenario not in scenarios:
        sys.exit(f"usage: {sys.argv[0]} {'|'.join(scenarios)}")
    base = tempfile.mkdtemp(prefix=f"attest-{scenario}-", dir="/tmp")
    os.chmod(base, 0o755)
    started = time.monotonic()
    try:
        figures = scenarios[scenario](base)
        log(f"RESULT {scenario} " + json.dumps(figures) + f" in {time.monotonic() - started:.0f} s")
    except tuple(not_run) as reason:
        log(f"NOT RUN {scenario}: {reason}")
    except Exception as error:
        log(f"FAILED {scenario}: {error}")
        for root, _, files in os.walk(base):
            for name in sorted(files):
                if name.endswith(".log"):
                    with open(os.path.join(root, name), errors="replace") as f:
                        tail = f.read()[-3000:]
                    log(f"--- {name} (end) ---\n{tail}")
        raise
    finally:
        for process in reversed(children):
            if process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGTERM)
                    process.wait(10)
                except Exception:
                    os.killpg(process.pid, signal.SIGKILL)
        for name in os.listdir(base):
            data = os.path.join(base, name, "data")
            if os.path.isdir(data):
                Postgres(base, name, 0).stop("immediate")
        if not os.environ.get("KEEP"):
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    run({"replica": replica, "servers": servers, "patroni": patroni})
