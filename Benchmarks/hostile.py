#!/usr/bin/env python3
"""One hostile member against `attest serve`, for Benchmarks/hostile.

    hostile.py seed PORT CAMPUS TOKEN ENTRIES        # a year of the largest entries and recordings
    hostile.py attack PORT CAMPUS TOKEN SECONDS      # everything at once, SECONDS long

`seed` writes ENTRIES journal entries of the largest text the server takes (10,000 characters,
40,000 bytes of UTF-8), dated over the last year, and recordings of the largest size (5 MB)
up to the member's quota. `attack` runs five loops at once for SECONDS: more of the largest
entries, recordings replaced and read back whole and in ranges, the year exported as PDF, CSV
and JSON, links made and opened, and every one of those past its quota. It prints one line:
RESULT requests=… by_status={…} exported_bytes=… audio_bytes=…
"""

import http.client
import json
import sys
import threading
import time
import datetime

PORT, CAMPUS, TOKEN = int(sys.argv[2]), sys.argv[3], sys.argv[4]
BASE = "/v1/campuses/%s" % CAMPUS
# 10,000 characters of four bytes each: the most the journal takes of both.
LARGEST_TEXT = "\U0001F600" * 10_000
LARGEST_TITLE = "\U0001F600" * 200
RECORDING = b"OggS" + bytes((i * 31 + 7) % 256 for i in range(5 * 1024 * 1024 - 4))

lock = threading.Lock()
statuses = {}
counters = {"exported": 0, "audio": 0}


def request(connection, method, path, body=None, headers=None):
    """One request on a kept connection; returns (status, body bytes)."""
    all_headers = {"Authorization": "Bearer " + TOKEN}
    all_headers.update(headers or {})
    connection.request(method, path, body=body, headers=all_headers)
    response = connection.getresponse()
    data = response.read()
    with lock:
        statuses[response.status] = statuses.get(response.status, 0) + 1
    return response.status, data


def connect():
    return http.client.HTTPConnection("127.0.0.1", PORT, timeout=120)


def entry(connection, date):
    body = json.dumps({"date": date, "title": LARGEST_TITLE, "text": LARGEST_TEXT, "tags": ["symptom"]})
    status, data = request(connection, "POST", BASE + "/me/journal", body, {"Content-Type": "application/json"})
    return json.loads(data)["id"] if status == 201 else None


def seed(count):
    connection = connect()
    today = datetime.date.today()
    ids = []
    for index in range(count):
        made = entry(connection, (today - datetime.timedelta(days=index % 365)).isoformat())
        if made:
            ids.append(made)
    recorded = 0
    for entry_id in ids[:12]:
        status, _ = request(connection, "PUT", BASE + "/me/journal/%s/audio" % entry_id, RECORDING, {"Content-Type": "audio/ogg"})
        recorded += status == 204
    print("seeded %d entries, %d recordings; statuses %s" % (len(ids), recorded, json.dumps(statuses, sort_keys=True)))


def loop(seconds, body):
    connection = connect()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            body(connection)
        except (OSError, http.client.HTTPException):
            connection.close()
            connection = connect()


def attack(seconds):
    listing = connect()
    _, data = request(listing, "GET", BASE + "/me/journal?limit=100")
    ids = [item["id"] for item in json.loads(data)["items"]]
    recorded = [item["id"] for item in json.loads(data)["items"] if item.get("audio")]
    today = datetime.date.today()
    year = (today - datetime.timedelta(days=365)).isoformat()
    state = {"turn": 0}

    def write(connection):
        entry(connection, today.isoformat())

    def recordings(connection):
        state["turn"] += 1
        target = (recorded or ids)[state["turn"] % max(1, len(recorded or ids))]
        if state["turn"] % 3 == 0:
            request(connection, "PUT", BASE + "/me/journal/%s/audio" % target, RECORDING, {"Content-Type": "audio/ogg"})
        _, whole = request(connection, "GET", BASE + "/me/journal/%s/audio" % target)
        _, part = request(connection, "GET", BASE + "/me/journal/%s/audio" % target, headers={"Range": "bytes=2000000-2100000"})
        with lock:
            counters["audio"] += len(whole) + len(part)

    def exports(connection):
        for kind in ("pdf", "csv", "json"):
            _, data = request(connection, "GET", BASE + "/me/export?from=%s&to=%s&format=%s" % (year, today.isoformat(), kind))
            with lock:
                counters["exported"] += len(data)

    def links(connection):
        body = json.dumps({"expiresIn": 3600, "from": year, "to": today.isoformat()})
        status, data = request(connection, "POST", BASE + "/me/shares", body, {"Content-Type": "application/json"})
        if status != 201:
            # Past the open links: revoke the oldest and go on.
            _, listed = request(connection, "GET", BASE + "/me/shares")
            items = [item for item in json.loads(listed).get("items", []) if item["status"] == "active"]
            if items:
                request(connection, "DELETE", BASE + "/me/shares/%s" % items[-1]["id"])
            return
        url = json.loads(data)["url"]
        for _ in range(22):  # two past the openings a link allows
            _, opened = request(connection, "POST", url, b"format=pdf", {"Content-Type": "application/x-www-form-urlencoded"})
            with lock:
                counters["exported"] += len(opened)

    threads = [threading.Thread(target=loop, args=(seconds, body)) for body in (write, recordings, exports, exports, links)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print("RESULT requests=%d by_status=%s exported_bytes=%d audio_bytes=%d" % (
        sum(statuses.values()), json.dumps(statuses, sort_keys=True).replace(" ", ""), counters["exported"], counters["audio"]))


if __name__ == "__main__":
    if sys.argv[1] == "seed":
        seed(int(sys.argv[5]))
    else:
        attack(float(sys.argv[5]))
