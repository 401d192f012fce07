#!/usr/bin/env python3
"""The SCIM service, checked by independent clients against a running `attest dev`.

1. scim2-tester (PyPI): its RFC 7643/7644 compliance checks (discovery, and creation, reads,
   queries, replacement, PATCH add/replace/remove of every attribute, deletion of Users and
   Groups) through the demo campus's directory token. Any ERROR or CRITICAL fails the run, as
   does a run in which nothing succeeded.
2. scim2-client (PyPI) driving a deprovisioning: a demo member signed in through the demo
   sign-in, with a shared link to their journal, is found by userName and PATCHed
   `active: false`; their session and their link stop working at once.

    python3 Tests/SCIM/scim_oracle.py [--attest .build/debug/attest]
"""

import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "Tests", "Contract"))
from contract import demo_sign_in, exit_on_sigterm, free_port, stop_dev, until_ready  # noqa: E402


def start_dev(attest, base, port):
    """`attest dev` on `port`; returns (process, directory token, a member's email) once it serves."""
    log = open(os.path.join(base, "dev.out"), "w")
    process = subprocess.Popen(
        [attest, "dev", "--port", str(port), "--data-dir", os.path.join(base, "dev")], stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True)
    return until_ready(process, lambda: wait_for_dev(process, log, port))


def wait_for_dev(process, log, port):
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit("attest dev exited with %d:\n%s" % (process.returncode, open(log.name).read()[-3000:]))
        text = open(log.name).read()
        directory = re.search(r"^Directory token \(SCIM at .*\): (\S+)$", text, re.M)
        member = re.search(r"^\s+member\s+(\S+@\S+)\s+\S+$", text, re.M)
        if directory and member:
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/readyz" % port, timeout=5) as answer:
                    if answer.status == 200:
                        return process, directory.group(1), member.group(1)
            except OSError:
                pass
        time.sleep(0.5)
    raise SystemExit("attest dev did not become ready within 120 s:\n%s" % open(log.name).read()[-3000:])


def request(method, url, token=None, body=None):
    """(status, parsed JSON or None) of one request."""
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = "Bearer " + token
    data = json.dumps(body).encode() if body is not None else None
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=data, method=method, headers=headers), timeout=10) as answer:
            raw = answer.read()
            return answer.status, json.loads(raw) if raw and answer.headers.get("Content-Type", "").find("json") >= 0 else None
    except urllib.error.HTTPError as error:
        return error.code, None


def compliance(scim_url, token):
    """scim2-tester's checks; returns the number of failures."""
    from httpx2 import Client
    from scim2_client.engines.httpx2 import SyncSCIMClient
    from scim2_tester import check_server
    from scim2_tester.utils import Status

    client = SyncSCIMClient(Client(base_url=scim_url, headers={"Authorization": "Bearer " + token}, timeout=30))
    results = check_server(client)
    counts = {}
    failures = 0
    for result in results:
        counts[result.status.name] = counts.get(result.status.name, 0) + 1
        if result.status in (Status.ERROR, Status.CRITICAL):
            failures += 1
            print("  %s %s %s: %s" % (result.status.name, result.resource_type or "", result.title, (result.reason or "")[:400]))
        elif result.status == Status.DEVIATION:
            print("  deviation %s %s: %s" % (result.resource_type or "", result.title, (result.reason or "")[:200]))
    print("scim2-tester: %d checks: %s" % (len(results), ", ".join("%s %d" % item for item in sorted(counts.items()))))
    if counts.get("SUCCESS", 0) == 0:
        print("scim2-tester: nothing succeeded: no check ran")
        return failures + 1
    return failures


def deprovisioning(port, scim_url, token, email):
    """scim2-client deactivates a signed-in member: their session and link stop at once."""
    from httpx2 import Client
    from scim2_client.engines.httpx2 import SyncSCIMClient
    from scim2_models import PatchOp, PatchOperation, SearchRequest, User

    api = "http://127.0.0.1:%d/v1/campuses/demo" % port
    session = demo_sign_in(port, email)
    today = datetime.date.today().isoformat()
    status, share = request("POST", api + "/me/shares", session, {"expiresIn": 3600, "from": today, "to": today})
    assert status == 201 and share, "the member's link was not made: %d" % status
    link = share["url"]
    link = link if link.startswith("http") else "http://127.0.0.1:%d%s" % (port, link)
    assert request("GET", api + "/me", session)[0] == 200, "the member's session does not work before"
    assert request("GET", link)[0] == 200, "the member's link does not open before"

    client = SyncSCIMClient(Client(base_url=scim_url, headers={"Authorization": "Bearer " + token}, timeout=30))
    client.discover()
    found = client.query(User, query_parameters=SearchRequest(filter='userName eq "%s"' % email))
    assert found.total_results == 1, "userName eq found %d users" % found.total_results
    user = found.resources[0]
    assert user.active is True
    patched = client.modify(User, user.id, PatchOp[User](operations=[PatchOperation(op=PatchOperation.Op.replace_, path="active", value=False)]))
    assert patched is None or patched.active is False, "the PATCH answered active=%r" % patched.active

    # Every server reads the campus's sign-in generation each second.
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and request("GET", api + "/me", session)[0] != 401:
        time.sleep(0.2)
    assert request("GET", api + "/me", session)[0] == 401, "the deactivated member's session still works"
    assert request("GET", link)[0] == 404, "the deactivated member's link still opens"
    reread = client.query(User, user.id)
    assert reread.active is False
    print("scim2-client: deprovisioned %s: session and link refused" % email)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--attest", default=os.path.join(ROOT, ".build", "debug", "attest"))
    options = parser.parse_args()
    exit_on_sigterm()
    base = tempfile.mkdtemp(prefix="attest-scim-")
    os.chmod(base, 0o755)  # run as root, `attest dev` runs PostgreSQL as postgres, which must reach it
    port = free_port()
    process = None
    try:
        process, token, member = start_dev(options.attest, base, port)
        scim_url = "http://127.0.0.1:%d/scim/v2/campuses/demo" % port
        failures = compliance(scim_url, token)
        try:
            deprovisioning(port, scim_url, token, member)
        except AssertionError as error:
            print("scim2-client: deprovisioning failed: %s" % error)
            failures += 1
        print("SCIM oracle: %s" % ("passed" if failures == 0 else "%d failures" % failures))
        return 1 if failures else 0
    finally:
        if process:
            stop_dev(process, timeout=30)
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
