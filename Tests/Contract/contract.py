#!/usr/bin/env python3
"""The API contract, fuzzed: Schemathesis against /openapi.yaml of a running `attest dev`.

Starts `attest dev` (its own PostgreSQL cluster, the demo campus and its people) on a free
port, then runs `st run` once for each role (member, screener, health officer, admin) with
that person's token and the campus path fixed to the demo campus: every check and every
phase (examples, coverage, fuzzing, stateful), a fixed seed and example count so CI repeats
itself. Prints one line per role and exits non-zero on any failure or server error.

    python3 Tests/Contract/contract.py [--attest .build/debug/attest] [--examples 75]
                                       [--seed 20261124] [--max-time SECONDS]

The runs go at once (`--parallel 1`: one after another), each as a client address of its
own behind the server's trusted loopback proxy, and a member's own data is not rate limited
here, so that its operations' cases reach them. CI runs 75 examples per operation (at 100
the six runs took 5 minutes on 2 cores, 10-13 in a slow hour, the longest step of CI after the
build); a release check runs `--examples 1000` (see docs/reliability.md).
"""

import argparse
import concurrent.futures
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
ROLES = ["member", "screener", "health_officer", "admin", "lab"]
# The laboratory's token opens one operation; its run tries that one alone.
LAB_RESULTS = "/v1/campuses/{campus}/lab/results"
# Schemathesis's command through this Python, whether or not pip put `st` on the PATH.
ST = [sys.executable, "-c", "import sys; from schemathesis.cli import schemathesis; sys.argv[0] = 'st'; sys.exit(schemathesis())"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def demo_sign_in(port, email):
    """A session the person signed in to themselves, through `attest dev`'s demo sign-in (the
    tokens `attest dev` prints are minted, and open no member's private data)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request("GET", "/c/demo/signin")
    page = connection.getresponse()
    body = page.read().decode()
    cookie = next((value.split(";")[0] for name, value in page.getheaders() if name.lower() == "set-cookie" and value.startswith("attest-csrf=")), None)
    csrf = re.search(r'name="csrf" value="([^"]+)"', body)
    if page.status != 200 or not cookie or not csrf:
        raise SystemExit("the demo sign-in page did not answer as expected (%d)" % page.status)
    form = urllib.parse.urlencode({"csrf": csrf.group(1), "email": email, "next": "/c/demo/"})
    connection.request("POST", "/c/demo/signin/demo", body=form, headers={
        "Content-Type": "application/x-www-form-urlencoded", "Cookie": cookie, "Origin": "http://127.0.0.1:%d" % port,
        "Sec-Fetch-Site": "same-origin"})
    answer = connection.getresponse()
    answer.read()
    session = next((value.split(";")[0].split("=", 1)[1] for name, value in answer.getheaders()
                    if name.lower() == "set-cookie" and value.startswith("attest-demo=")), None)
    connection.close()
    if answer.status != 303 or not session:
        raise SystemExit("the demo sign-in of %s answered %d without a session" % (email, answer.status))
    return session


def start_dev(attest, base, port):
    """`attest dev` on `port`; returns (process, {role: token}) once it serves: each role's
    demo person signed in through the demo sign-in."""
    data = os.path.join(base, "dev")
    log = open(os.path.join(base, "dev.out"), "w")
    env = dict(os.environ)
    # A member's own data (journal, episodes, exports, links, records) allows 300 requests a
    # minute after 60 at once, which a run spends in seconds: about half of those operations'
    # cases were then 429s that each waited for the allowance (OwnDataMiddleware), testing
    # nothing of the operation. Raised here so that every case reaches the operation; the
    # refusal itself is QuotaTests'. Loopback is a trusted proxy, so that each run names a
    # client address of its own (X-Forwarded-For, see run_role): the runs go at once, and
    # one address's allowance for unknown tokens (what the invalid-authentication checks
    # send) is each run's, as it was when they ran one after another.
    process = subprocess.Popen(
        [attest, "dev", "--port", str(port), "--data-dir", data, "--own-data-requests-per-minute", "500000",
         "--trusted-proxy", "127.0.0.1"],
        stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    return until_ready(process, lambda: wait_for_dev(process, log, port))


def wait_for_dev(process, log, port):
    deadline = time.monotonic() + 120
    emails = {}
    lab_token = None
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit("attest dev exited with %d:\n%s" % (process.returncode, open(log.name).read()[-3000:]))
        text = open(log.name).read()
        for line in text.splitlines():
            match = re.match(r"^\s+(member|screener|health_officer|admin)\s+(\S+@\S+)\s+(\S+)$", line)
            if match and match.group(1) not in emails:
                emails[match.group(1)] = match.group(2)
            elif match and match.group(1) == "member":
                emails["second member"] = match.group(2)
            lab = re.match(r"^Laboratory token \(.*\): (\S+)$", line)
            if lab:
                lab_token = lab.group(1)
        if all(role in emails for role in ROLES + ["second member"] if role != "lab") and lab_token:
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/readyz" % port, timeout=5) as answer:
                    if answer.status == 200:
                        tokens = {role: demo_sign_in(port, email) for role, email in emails.items()}
                        tokens["lab"] = lab_token
                        return process, tokens
            except OSError:
                pass
        time.sleep(0.5)
    raise SystemExit("attest dev did not become ready within 120 s:\n%s" % open(log.name).read()[-3000:])


def stop_dev(process, timeout):
    """`attest dev` (in a session of its own) and everything it started: asked with SIGINT to
    stop within `timeout` seconds, then killed. Nothing once it has ended (its id may be
    another's by then)."""
    if process.poll() is not None:
        return
    try:
        if timeout > 0:
            os.killpg(process.pid, signal.SIGINT)
            try:
                process.wait(timeout=timeout)
                return
            except subprocess.TimeoutExpired:
                pass
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    except ProcessLookupError:
        pass


def until_ready(process, wait):
    """`wait()`'s answer; when it fails, or the script is told to stop meanwhile, `process` (an
    `attest dev` just started) and its cluster go too."""
    try:
        return wait()
    except BaseException:
        stop_dev(process, timeout=0)
        raise


def exit_on_sigterm():
    """SIGTERM as an exit (status 143), so that `finally` stops `attest dev`: scripts/test ends
    its background run this way when it ends early (a failure, Ctrl-C), and Python's default
    would leave the server running."""
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))


SIGN_OUT = "/v1/campuses/{campus}/sessions/current"


def run_role(role, token, port, options, reports, only_sign_out=False, client=0):
    """One `st run`; returns (exit status, seconds, output). Signing out revokes the token
    the run uses, so the role runs leave that operation out and a run of its own, with a
    token nothing else needs, tries it."""
    report = os.path.join(reports, role + ".json")
    command = [
        *ST, "--config-file", os.path.join(HERE, "schemathesis.toml"), "run", "http://127.0.0.1:%d/openapi.yaml" % port,
        "--header", "Authorization: Bearer " + token,
        # Each run its own client address (TEST-NET-1) behind the trusted loopback proxy.
        "--header", "X-Forwarded-For: 192.0.2.%d" % (1 + client),
        "--checks", "all",
        # The sign-out and laboratory runs try one operation alone: no links to follow from it.
        "--phases", "examples,coverage,fuzzing" + ("" if only_sign_out or role == "lab" else ",stateful"),
        "--seed", str(options.seed),
        "--max-examples", str(options.examples),
        "--generation-deterministic",
        # One worker: Hypothesis describing its filters in two threads at once trips CPython
        # 3.11's parser ("AST constructor recursion depth mismatch").
        "--workers", "1",
        "--request-timeout", "10",
        "--no-color",
        "--report", "json,ndjson", "--report-json-path", report, "--report-ndjson-path", os.path.join(reports, role + ".ndjson"),
    ]
    if options.max_time:
        command += ["--max-time", str(options.max_time)]
    if role == "lab":
        command += ["--include-path", LAB_RESULTS]
    else:
        command += ["--include-path" if only_sign_out else "--exclude-path", SIGN_OUT]
    started = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True, cwd=reports)
    seconds = time.monotonic() - started
    output = result.stdout + result.stderr
    with open(os.path.join(reports, role + ".txt"), "w") as f:
        f.write(output)
    return result.returncode, seconds, output


def successes(reports, role):
    """How many requests of a run the server answered with a 2xx, from its NDJSON event log: a
    run whose every request was refused (a token that stopped working) tested nothing."""
    path = os.path.join(reports, role + ".ndjson")
    if not os.path.exists(path):
        return 0
    with open(path) as f:
        return sum(len(re.findall(r'"status_code":\s*2\d\d\b', line)) for line in f)


def check_token(port, role, token):
    """GET …/me with the token must answer 200 before a run relies on it (the laboratory's:
    an empty Bundle at …/lab/results, refused as invalid, not as unauthorized)."""
    if role == "lab":
        request = urllib.request.Request(
            "http://127.0.0.1:%d/v1/campuses/demo/lab/results" % port, data=b'{"resourceType": "Bundle", "entry": []}',
            headers={"Authorization": "Bearer " + token, "Content-Type": "application/fhir+json"})
        try:
            urllib.request.urlopen(request, timeout=10)
            status = 200
        except urllib.error.HTTPError as error:
            status = error.code
        if status != 422:
            raise SystemExit("the laboratory's token does not work: an empty Bundle answered %d, not 422" % status)
        return
    request = urllib.request.Request("http://127.0.0.1:%d/v1/campuses/demo/me" % port, headers={"Authorization": "Bearer " + token})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            status = answer.status
    except urllib.error.HTTPError as error:
        status = error.code
    if status != 200:
        raise SystemExit("the %s's token does not work: GET /v1/campuses/demo/me answered %d" % (role, status))


def summary(output):
    """The figures of st's closing lines ("N passed, M failed …" and the test cases)."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    picked = [line for line in lines if re.search(r"\d+ (passed|failed|errored|skipped|generated)", line)]
    return "; ".join(picked[-3:]) if picked else (lines[-1] if lines else "(no output)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attest", default=os.path.join(ROOT, ".build", "debug", "attest"))
    parser.add_argument("--examples", type=int, default=75)
    parser.add_argument("--seed", type=int, default=20261124)
    parser.add_argument("--max-time", type=int, default=0)
    parser.add_argument("--roles", default=",".join(ROLES))
    parser.add_argument("--parallel", type=int, default=len(ROLES) + 1, help="runs at once (1: one after another)")
    options = parser.parse_args()
    if options.parallel < 1:
        parser.error("--parallel must be at least 1")
    if subprocess.run([sys.executable, "-c", "import schemathesis"], capture_output=True).returncode != 0:
        raise SystemExit("Schemathesis is not installed for %s: run scripts/install-contract-deps" % sys.executable)

    exit_on_sigterm()
    base = tempfile.mkdtemp(prefix="attest-contract-")
    if os.geteuid() == 0:
        # `attest dev` runs its cluster as the postgres user, who must be able to enter here.
        os.chmod(base, 0o755)
    reports = os.path.join(base, "reports")
    os.makedirs(reports)
    port = free_port()
    process, tokens = start_dev(options.attest, base, port)
    failed = []
    try:
        runs = [(role, role, False) for role in options.roles.split(",")] + [("sign-out", "second member", True)]
        for name, role, _ in runs:
            check_token(port, role, tokens[role])
        # The runs go at once, each its own `st` process (one worker each, see run_role) and
        # its own client address: no run takes from another's allowances. One after another,
        # the runs took 14 of CI's minutes; at once, as long as the longest.
        with concurrent.futures.ThreadPoolExecutor(max_workers=options.parallel) as pool:
            started = [pool.submit(run_role, name, tokens[role], port, options, reports, only_sign_out, client)
                       for client, (name, role, only_sign_out) in enumerate(runs)]
            results = [(name, future.result()) for (name, _, _), future in zip(runs, started)]
        for name, (status, seconds, output) in results:
            answered = successes(reports, name)
            print("schemathesis %-15s exit %d in %5.1f s, %d answered 2xx: %s" % (name, status, seconds, answered, summary(output)), flush=True)
            if status != 0:
                failed.append(name)
                print(output[-12000:], flush=True)
            elif answered == 0:
                failed.append(name)
                print("no request of the %s run was answered with a 2xx: its token or its requests reached nothing" % name, flush=True)
    finally:
        stop_dev(process, timeout=60)
        server_log = open(os.path.join(base, "dev.out")).read()
        # The server must never have answered 500 (logged as an error with "unhandled").
        unhandled = [line for line in server_log.splitlines() if "unhandled" in line]
        if unhandled:
            failed.append("server log")
            print("the server logged unhandled errors:\n" + "\n".join(unhandled[:20]))
        if not failed:
            shutil.rmtree(base, ignore_errors=True)
        else:
            print("kept for inspection: " + base)
    if failed:
        raise SystemExit("the API contract failed for: " + ", ".join(failed))
    print("the API contract holds for every role")


if __name__ == "__main__":
    main()
