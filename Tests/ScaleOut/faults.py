#!/usr/bin/env python3
"""Faults that need processes, a disk or a network of their own (issue 33).

    faults.py serve-killed   `attest serve` killed with SIGKILL while a batch is mid-write, then
                             started again: no partial rows, the rollups equal a recount
    faults.py webhook        the webhook receiver down for 2 minutes, then slow (5 s answers),
                             then back: every event delivered once, none dead-lettered
    faults.py disk-full      PostgreSQL's disk (a tmpfs of its own) filled under load, then
                             freed: 503s meanwhile, no corruption (pg_amcheck), recovery
    faults.py network-cut    PostgreSQL in a network namespace of its own, its link cut under
                             load, then restored: 503s within the timeouts, recovery

Each submits with a client that logs every attestation acknowledged with 201 and checks the
table against that log afterwards; each prints a FAULT line with its figures and a RESULT line
for Tests/AttestServerTests/ScaleOutTests.swift. Environment as for scaleout.py; the disk and
network faults need root (mount, ip netns) and say "NOT RUN" with the reason without it.
"""
import http.client
import http.server
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scaleout as s  # noqa: E402  (the clusters, the server, the load client)

CAMPUS = s.CAMPUS


class NotRun(Exception):
    """The machine cannot make this fault (no root, no tmpfs, no network namespaces)."""


class TimedLoad(s.Load):
    """The scale-out load client, also timing every refused request (how fast a 503 comes)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.refused = []  # (monotonic time answered, seconds taken, status)
        self.answered = []  # monotonic times of 201s

    def client(self, pace):
        while not self.stop.is_set():
            index = self.take()
            if index is None:
                return
            key = f"fault-{index}"
            deadline = time.monotonic() + 180
            while time.monotonic() < deadline:
                with self.lock:
                    self.sent += 1
                started = time.monotonic()
                try:
                    status, reply = s.request(self.ports[0], "POST", f"/v1/campuses/{CAMPUS}/attestations", self.tokens[index],
                                              self.body, {"Idempotency-Key": key}, timeout=30)
                except (OSError, http.client.HTTPException):
                    status, reply = None, None
                now = time.monotonic()
                if status in (200, 201):
                    with self.lock:
                        self.acknowledged[index] = reply["id"].lower()
                        self.answered.append(now)
                    break
                with self.lock:
                    if status in (None, 502, 503, 504):
                        self.failures += 1
                        self.refusals[status] = self.refusals.get(status, 0) + 1
                        self.refused.append((now, now - started, status))
                        self.last_failure = now
                    else:
                        self.other.append((index, status, reply))
                        break
                time.sleep(0.1)
            if pace:
                time.sleep(pace)

    def recovery_after(self, instant):
        with self.lock:
            later = [t for t in self.answered if t > instant]
        return min(later) - instant if later else None


def database(base, name="db", members=600, settings=None, cls=None):
    return s.campus_database(base, members, name, {"synchronous_commit": "on", **(settings or {})}, cls)


def consistency(db):
    """No partial rows: every attestation has its rollups and its event, nothing else has."""
    row = db.sql("""
        SELECT (SELECT count(*) FROM attestations),
               (SELECT coalesce(sum(submitted), 0) FROM daily_stats),
               (SELECT coalesce(sum(on_time) + sum(late), 0) FROM daily_stats),
               (SELECT coalesce(sum(green) + sum(yellow) + sum(red), 0) FROM daily_stats),
               (SELECT count(*) FROM attestations WHERE color IN ('green', 'yellow', 'red')),
               (SELECT coalesce(sum(count), 0) FROM daily_answer_counts WHERE answer = 'true'),
               (SELECT count(*) FROM attestations a, jsonb_each(a.answers) e WHERE e.value = 'true'::jsonb),
               (SELECT count(*) FROM attestations a WHERE NOT EXISTS (
                    SELECT 1 FROM notification_outbox o WHERE o.campus_id = a.campus_id AND o.event = 'attestation.submitted'
                    AND o.payload ->> 'attestationId' = a.id::text)),
               (SELECT count(*) FROM notification_outbox o WHERE o.event = 'attestation.submitted' AND NOT EXISTS (
                    SELECT 1 FROM attestations a WHERE a.campus_id = o.campus_id AND a.id::text = o.payload ->> 'attestationId'))
        """).split("|")
    (stored, submitted, timed, colored, colored_rows, yes_counts, yes_rows, without_event, orphan_events) = map(int, row)
    s.check(submitted == stored and timed == stored, f"daily_stats count {submitted} ({timed} on time or late), {stored} stored")
    s.check(colored == colored_rows, f"daily_stats colours {colored}, recount {colored_rows}")
    s.check(yes_counts == yes_rows, f"daily_answer_counts {yes_counts}, recount {yes_rows}")
    s.check(without_event == 0 and orphan_events == 0, f"{without_event} attestations without their event, {orphan_events} events without theirs")
    return stored


def receiver(port=0, delay=0.0):
    """A webhook receiver counting deliveries by event id (the Idempotency-Key)."""
    deliveries = {}
    lock = threading.Lock()
    # Per delivery, by wall clock: when the sender signed it (X-Attest-Signature's t, whole
    # seconds), when this receiver's handler began and when it answered. A delivery sent
    # twice then shows where its first try's time went: before the handler (connecting,
    # accepting) or in it. Recorded before the answer is written: a sender that timed out
    # has closed the connection, and writing to it may raise.
    state = {"delay": delay, "timings": {}}

    class Receiver(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            began = time.time()
            body = self.rfile.read(int(self.headers["Content-Length"]))
            if state["delay"]:
                time.sleep(state["delay"])
            key = self.headers["Idempotency-Key"]
            signed = self.headers.get("X-Attest-Signature", "").partition("t=")[2].partition(",")[0]
            with lock:
                deliveries.setdefault(key, []).append(json.loads(body).get("event"))
                state["timings"].setdefault(key, []).append((int(signed or 0), began, time.time()))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = s.Receiving(("127.0.0.1", port), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, deliveries, lock, state


def timings(db, state, keys):
    """Where each twice-delivered event's deliveries spent their time, by the receiver's clock
    against the sender's signing second, and how many times the outbox claimed it."""
    lines = []
    for key in list(keys)[:5]:
        tries = ", ".join(f"signed {signed}, handler +{began - signed:.1f} s, answered +{answered - signed:.1f} s"
                          for signed, began, answered in state["timings"].get(key, []))
        attempts = db.sql(f"SELECT attempts FROM notification_outbox WHERE id = '{key}'")
        lines.append(f"{key}: {tries}; claimed {attempts} times")
    return "; ".join(lines)


def enable_webhook(base, owner, port):
    settings = os.path.join(base, "webhook.json")
    with open(settings, "w") as f:
        json.dump({"url": f"http://127.0.0.1:{port}/events", "secret": "a-secret-of-sixteen+",
                   "events": ["attestation.submitted"], "timeoutSeconds": 10}, f)
    s.attest("plugin", "enable", CAMPUS, "sink", "webhook", "--settings", settings, database_url=owner)


def fault_line(fault, load, figures, recovered):
    recovery = f"{recovered:.1f} s" if recovered is not None else "-"
    kinds = ", ".join(f"{'no answer' if status is None else status}: {count}" for status, count in sorted(
        load.refusals.items(), key=lambda item: str(item[0])))
    s.log(f"FAULT {fault}: sent {load.sent}, acknowledged {figures['acknowledged']}, found {figures['acknowledged'] - figures['lost']}, "
          f"lost {figures['lost']}, duplicates {figures['duplicates']}, refused {sum(load.refusals.values())}"
          f"{f' ({kinds})' if kinds else ''}, recovered in {recovery}")


# MARK: Scenarios

def serve_killed(base):
    db, tokens, _ = database(base)
    owner = f"postgresql://postgres@{db.host()}/attest"
    sink, deliveries, _, _ = receiver()
    enable_webhook(base, owner, sink.server_port)
    # Member 301's insert waits 3 s in PostgreSQL: its batch is mid-write when the server dies.
    db.sql("""
        CREATE FUNCTION hold_a_batch() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF NEW.user_id = (SELECT id FROM users WHERE email = 'm301@north.example.edu') THEN PERFORM pg_sleep(3); END IF;
            RETURN NEW;
        END $$;
        CREATE TRIGGER hold_a_batch BEFORE INSERT ON attestations FOR EACH ROW EXECUTE FUNCTION hold_a_batch()""")
    url = f"postgresql://attest_server@{db.host()}/attest"
    extra = ["--allow-outbound-host", "127.0.0.1"]
    server, port = s.serve(base, "server", url, extra)
    body = s.healthy_answers(port, tokens[0])
    load = TimedLoad([port], tokens, body, clients=16)
    load.submit_all(range(600), pace=0.02)
    s.wait_until("member 301's insert to be held", lambda: int(db.sql(
        "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep' AND usename = 'attest_server'")) > 0, 60)
    in_batch = int(db.sql("SELECT count(*) FROM pg_stat_activity WHERE usename = 'attest_server' AND state = 'active'"))
    acknowledged_before = len(load.acknowledged)
    killed = time.monotonic()
    server.send_signal(signal.SIGKILL)
    server.wait(10)
    time.sleep(1)
    s.serve(base, "server-again", url, extra, port=port)
    load.join()
    figures = s.verify_stored(db, load, 600)
    stored = consistency(db)
    s.wait_until("every event delivered", lambda: int(db.sql(
        "SELECT count(*) FROM notification_outbox WHERE delivered_at IS NULL")) == 0, 120)
    twice = [k for k, v in deliveries.items() if len(v) > 1]
    # An event whose delivery the killed server had begun may come twice (at least once);
    # every one comes, under one id each time.
    s.check(len(deliveries) == stored, f"{len(deliveries)} events delivered, {stored} attestations")
    recovered = load.recovery_after(killed)
    s.log(f"  killed with {acknowledged_before} acknowledged and {in_batch} statements running; "
          f"{len(twice)} events delivered twice (begun by the killed server)")
    fault_line("attest serve killed with SIGKILL mid-batch, then started again", load, figures, recovered)
    figures.update(recoveredSeconds=round(recovered or 0, 1), deliveredTwice=len(twice))
    return figures


def webhook(base):
    down = float(os.environ.get("FAULT_WEBHOOK_DOWN", "120"))
    slow = float(os.environ.get("FAULT_WEBHOOK_SLOW", "30"))
    db, tokens, _ = database(base, members=300)
    owner = f"postgresql://postgres@{db.host()}/attest"
    sink_port = s.free_port()  # nothing listens there yet: the receiver is down
    enable_webhook(base, owner, sink_port)
    url = f"postgresql://attest_server@{db.host()}/attest"
    server, port = s.serve(base, "server", url, ["--allow-outbound-host", "127.0.0.1"])
    body = s.healthy_answers(port, tokens[0])
    load = TimedLoad([port], tokens, body, clients=2)
    started = time.monotonic()
    # About two submissions a second, through the outage and the slow spell.
    load.submit_all(range(300), pace=max(0.1, 2 * (down + slow) / 300 - 0.05))
    time.sleep(max(0, started + down - time.monotonic()))
    queued = int(db.sql("SELECT count(*) FROM notification_outbox WHERE delivered_at IS NULL AND attempts > 0"))
    sink, deliveries, lock, state = receiver(sink_port, delay=5.0)
    s.log(f"  receiver down for {down:.0f} s ({queued} events waiting, each tried at least once), now answering after 5 s")
    time.sleep(slow)
    state["delay"] = 0.0
    back = time.monotonic()
    load.join(timeout=300)
    figures = s.verify_stored(db, load, 300)
    stored = consistency(db)
    s.wait_until("every event delivered", lambda: int(db.sql(
        "SELECT count(*) FROM notification_outbox WHERE delivered_at IS NULL")) == 0, 300)
    drained = time.monotonic() - back
    with lock:
        twice = {k: v for k, v in deliveries.items() if len(v) > 1}
        count = len(deliveries)
    dead = int(db.sql("SELECT count(*) FROM notification_outbox WHERE dead_at IS NOT NULL"))
    attempts = db.sql("SELECT max(attempts) FROM notification_outbox")
    slow_ones = int(db.sql(f"SELECT count(*) FROM notification_outbox WHERE attempts > 1"))
    s.check(not twice, f"delivered more than once: {list(twice.items())[:3]}; {timings(db, state, twice)}")
    s.check(count == stored, f"{count} events delivered, {stored} attestations")
    s.check(dead == 0, f"{dead} events dead-lettered")
    s.log(f"  every event delivered once ({count}); {slow_ones} needed retries, at most {attempts} attempts; "
          f"the outbox was empty {drained:.0f} s after the receiver was fast again; none dead-lettered")
    s.log(f"FAULT webhook receiver down {down:.0f} s, then slow (5 s answers) {slow:.0f} s, then back: events {stored}, "
          f"delivered {count}, delivered twice {len(twice)}, dead-lettered {dead}, drained in {drained:.0f} s")
    figures.update(events=stored, delivered=count, deliveredTwice=len(twice), deadLettered=dead, drainedSeconds=round(drained))
    return figures


def disk_full(base):
    if os.geteuid() != 0:
        raise NotRun("mounting a tmpfs for PostgreSQL's disk needs root")
    disk = os.path.join(base, "disk")
    os.makedirs(disk)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=160m,mode=0755", "tmpfs", disk], capture_output=True, text=True)
    if mounted.returncode != 0:
        raise NotRun(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        return disk_full_on(base, disk)
    finally:
        for name in ("db",):
            s.Postgres(disk, name, 0).stop("immediate")
        subprocess.run(["umount", "-l", disk])


def disk_full_on(base, disk):
    db, tokens, _ = database(disk, members=800, settings={"min_wal_size": "'32MB'", "max_wal_size": "'48MB'"})
    db.sql("CREATE EXTENSION amcheck")
    owner = f"postgresql://postgres@{db.host()}/attest"
    sink, _, _, _ = receiver()
    enable_webhook(base, owner, sink.server_port)
    url = f"postgresql://attest_server@{db.host()}/attest"
    server, port = s.serve(base, "server", url, ["--allow-outbound-host", "127.0.0.1"])
    body = s.healthy_answers(port, tokens[0])
    load = TimedLoad([port], tokens, body, clients=8)
    load.submit_all(range(800), pace=0.05)
    s.wait_until("submissions under way", lambda: len(load.acknowledged) >= 100, 60)
    filler = os.path.join(disk, "filler")
    block = b"\0" * (1 << 20)
    with open(filler, "wb") as f:
        try:
            while True:
                f.write(block)
                f.flush()
        except OSError:
            pass
    full = time.monotonic()
    acknowledged_full = len(load.acknowledged)
    time.sleep(15)
    refused_while_full = sum(1 for t, _, _ in load.refused if t > full)
    acknowledged_during = len(load.acknowledged) - acknowledged_full
    os.remove(filler)
    freed = time.monotonic()
    load.join(timeout=300)
    s.check(server.poll() is None, "the server exited while the disk was full")
    figures = s.verify_stored(db, load, 800)
    consistency(db)
    check = subprocess.run(["runuser", "-u", "postgres", "--", os.path.join(s.PG_BIN, "pg_amcheck"), "-h", db.dir, "-p", str(db.port),
                            "-U", "postgres", "-d", "attest", "--heapallindexed"], capture_output=True, text=True)
    s.check(check.returncode == 0, f"pg_amcheck found corruption: {check.stdout[-2000:]} {check.stderr[-2000:]}")
    recovered = load.recovery_after(freed)
    s.log(f"  disk full for 15 s: {refused_while_full} requests refused (503), {acknowledged_during} acknowledged meanwhile "
          f"(their WAL fitted); pg_amcheck clean")
    fault_line("PostgreSQL's disk full for 15 s under load, then freed", load, figures, recovered)
    figures.update(refusedWhileFull=refused_while_full, recoveredSeconds=round(recovered or 0, 1))
    return figures


class NamespacedPostgres(s.Postgres):
    """A cluster in network namespace `NAMESPACE`, reached over a veth pair at ADDRESS."""
    namespace = None
    address = None

    def configure(self, settings):
        super().configure({"listen_addresses": f"'{self.address}'", **settings})
        with open(os.path.join(self.data, "pg_hba.conf"), "a") as hba:
            hba.write(f"host all all {self.address.rsplit('.', 1)[0]}.0/24 trust\n")

    def start(self):
        argv = ["ip", "netns", "exec", self.namespace, "runuser", "-u", "postgres", "--", "env", "-C", self.dir,
                os.path.join(s.PG_BIN, "pg_ctl"), "start", "-w", "-D", self.data, "-l", os.path.join(self.dir, "postgres.log")]
        result = subprocess.run(argv, capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"pg_ctl start in {self.namespace}: {result.stderr.strip()}")

    def sql(self, statement, database="attest"):
        # The Unix socket is a file: reachable from outside the namespace, whatever the link does.
        result = subprocess.run(["psql", "-X", "-At", "-v", "ON_ERROR_STOP=1", "-h", self.dir, "-p", str(self.port),
                                 "-U", "postgres", "-d", database, "-c", statement], capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"psql in {self.namespace}: {result.stderr.strip()}")
        return result.stdout.strip()

    def host(self):
        return f"{self.address}:{self.port}"


def ip(*args, check=True):
    result = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and result.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {result.stderr.strip()}")
    return result


def network_cut(base):
    if os.geteuid() != 0 or shutil.which("ip") is None:
        raise NotRun("a network namespace needs root and iproute2")
    suffix = os.getpid() % 200 + 20
    namespace, outside, inside = f"attest-cut-{os.getpid()}", f"atc{os.getpid() % 100000}a", f"atc{os.getpid() % 100000}b"
    if ip("netns", "add", namespace, check=False).returncode != 0:
        raise NotRun("cannot make a network namespace here")
    try:
        ip("link", "add", outside, "type", "veth", "peer", "name", inside, "netns", namespace)
        ip("addr", "add", f"10.231.{suffix}.1/24", "dev", outside)
        ip("link", "set", outside, "up")
        ip("netns", "exec", namespace, "ip", "addr", "add", f"10.231.{suffix}.2/24", "dev", inside)
        ip("netns", "exec", namespace, "ip", "link", "set", inside, "up")
        ip("netns", "exec", namespace, "ip", "link", "set", "lo", "up")
        NamespacedPostgres.namespace, NamespacedPostgres.address = namespace, f"10.231.{suffix}.2"
        return network_cut_with(base, outside)
    finally:
        s.Postgres(base, "db", 0).stop("immediate")
        ip("link", "del", outside, check=False)
        ip("netns", "del", namespace, check=False)


def network_cut_with(base, link):
    db, tokens, _ = database(base, members=800, cls=NamespacedPostgres)
    owner = f"postgresql://postgres@{db.host()}/attest"
    sink, _, _, _ = receiver()
    enable_webhook(base, owner, sink.server_port)
    url = f"postgresql://attest_server@{db.host()}/attest?connect_timeout=2"
    server, port = s.serve(base, "server", url, ["--allow-outbound-host", "127.0.0.1"])
    body = s.healthy_answers(port, tokens[0])
    load = TimedLoad([port], tokens, body, clients=8)
    load.submit_all(range(800), pace=0.05)
    s.wait_until("submissions under way", lambda: len(load.acknowledged) >= 100, 60)
    # The link down: packets to PostgreSQL go nowhere, those on their way are lost, and
    # nothing says so to either end (a cable pulled, a switch gone).
    ip("link", "set", link, "down")
    cut = time.monotonic()
    time.sleep(20)
    ip("link", "set", link, "up")
    restored = time.monotonic()
    load.join(timeout=300)
    during = [(t, took, status) for t, took, status in load.refused if cut < t <= restored + 1]
    s.check(during, "no request was refused while the link was down")
    slowest = max(took for _, took, _ in during)
    first = min(t for t, _, _ in during) - cut
    s.check(all(status == 503 for _, _, status in during), f"refusals while cut: {sorted({st for _, _, st in during}, key=str)}")
    # A request on a connection the cut caught waits for libpq's tcp_user_timeout (the connect
    # timeout, 2 s here), then for a new connection (2 s): 503 within about twice that.
    s.check(slowest < 12, f"the slowest 503 during the cut took {slowest:.1f} s")
    figures = s.verify_stored(db, load, 800)
    consistency(db)
    recovered = load.recovery_after(restored)
    s.log(f"  link down for 20 s: {len(during)} requests refused, the first {first:.1f} s after the cut, "
          f"the slowest answered in {slowest:.1f} s")
    fault_line("network cut between server and PostgreSQL for 20 s under load, then restored", load, figures, recovered)
    figures.update(refusedDuringCut=len(during), slowestRefusalSeconds=round(slowest, 1), recoveredSeconds=round(recovered or 0, 1))
    return figures


if __name__ == "__main__":
    s.run({"serve-killed": serve_killed, "webhook": webhook, "disk-full": disk_full, "network-cut": network_cut}, not_run=(NotRun,))
