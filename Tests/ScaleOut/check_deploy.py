#!/usr/bin/env python3
"""Checks every file in deploy/ with the tools this machine has (issue 32).

systemd-analyze verify and security (offline) on the unit, nginx -t on nginx.conf, the
Kubernetes objects against their schemas (kubernetes-validate, strict, offline) and what
they must say (probes, non-root, read-only root), the compose file's services and wiring,
Patroni's own config validator, the Containerfile's stages, and the Citus script's order.
Each check is first shown to fail on a broken copy, so none passes vacuously.
Environment: ATTEST_BINARY. Prints `ok <check>` for each; exits non-zero at the first failure.
"""
import atexit
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DEPLOY = os.path.join(REPO, "deploy")
ATTEST = os.environ["ATTEST_BINARY"]
WORK = tempfile.mkdtemp(prefix="attest-deploy-check-")
atexit.register(shutil.rmtree, WORK, ignore_errors=True)


def read(*path):
    with open(os.path.join(DEPLOY, *path)) as f:
        return f.read()


def write(name, text):
    path = os.path.join(WORK, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def check(condition, message):
    if not condition:
        sys.exit(f"FAILED {message}")


def ok(name):
    print(f"ok {name}", flush=True)


def run(argv):
    return subprocess.run(argv, capture_output=True, text=True)


# systemd: verify complains about nothing; the exposure score is low; a misspelt key is caught.
def systemd_unit(text):
    path = write("attest.service", text.replace("/usr/local/bin/attest", ATTEST))
    verify = run(["systemd-analyze", "verify", "--man=no", path])
    return verify.returncode, (verify.stdout + verify.stderr).strip(), path


unit = read("attest.service")
status, complaints, path = systemd_unit(unit)
check(status == 0 and complaints == "", f"systemd-analyze verify deploy/attest.service: {complaints}")
status, complaints, _ = systemd_unit(unit.replace("NoNewPrivileges=yes", "NoNewPrivilege=yes"))
check("Unknown key" in complaints, "systemd-analyze verify did not notice a misspelt key")
security = run(["systemd-analyze", "security", "--offline=true", "--no-pager", path])
score = re.search(r"Overall exposure level for attest\.service: ([0-9.]+)", security.stdout)
check(score is not None and float(score.group(1)) <= 2.0, f"systemd-analyze security: exposure {score and score.group(1)} (at most 2.0)")
for line in ["ExecStartPre=/usr/local/bin/attest migrate", "EnvironmentFile=", "Restart=on-failure", "ProtectSystem=strict",
             "NoNewPrivileges=yes", "PrivateTmp=yes", "CapabilityBoundingSet=\n", "SystemCallFilter=@system-service", "KillSignal=SIGTERM",
             "DynamicUser=yes"]:
    check(line in unit, f"deploy/attest.service lacks {line.strip()}")
ok(f"systemd unit (verify clean, exposure {score.group(1)})")

# nginx: the real file, with loopback upstreams, passes nginx -t; the body limit is the server's.
conf = read("nginx.conf")
def nginx_test(text):
    text = (text.replace("attest-1:8080", "127.0.0.1:18081").replace("attest-2:8080", "127.0.0.1:18082")
            .replace("listen 80;", "listen 127.0.0.1:18080;").replace("/tmp/attest-nginx", os.path.join(WORK, "nginx")))
    return run(["nginx", "-t", "-p", WORK, "-c", write("nginx.conf", text)])
result = nginx_test(conf)
check(result.returncode == 0, f"nginx -t deploy/nginx.conf: {result.stderr}")
check(nginx_test(conf.replace("least_conn;", "least_conns;")).returncode != 0, "nginx -t did not notice an unknown directive")
limit = re.search(r"client_max_body_size (\d+)k;", conf)
check(limit and int(limit.group(1)) * 1024 == 64 * 1024, "client_max_body_size must equal the server's 64 KiB")
check("proxy_set_header X-Forwarded-For $remote_addr;" in conf, "nginx must replace X-Forwarded-For, not append to it")
check("zone attest" in conf, "the upstream needs a shared zone (each worker otherwise keeps its own view of failed servers)")
ok("nginx.conf (nginx -t, body limit 64 KiB, X-Forwarded-For replaced, shared upstream zone)")

# Kubernetes: every object validates strictly against the 1.37 schemas, and says what matters.
manifests = sorted(n for n in os.listdir(os.path.join(DEPLOY, "kubernetes")) if n.endswith(".yaml") and n != "kustomization.yaml")
paths = [os.path.join(DEPLOY, "kubernetes", n) for n in manifests]
result = run([sys.executable, "-m", "kubernetes_validate", "--strict", "--quiet", *paths])
check(result.returncode == 0, f"kubernetes-validate: {result.stdout}{result.stderr}")
bad = write("bad.yaml", read("kubernetes", "deployment.yaml").replace("revisionHistoryLimit: 5", "revisionHistoryLimit: 5\n  replica: 3"))
check(run([sys.executable, "-m", "kubernetes_validate", "--strict", "--quiet", bad]).returncode != 0,
      "kubernetes-validate did not notice an unknown field")
objects = {}
for path in paths:
    with open(path) as f:
        for document in yaml.safe_load_all(f):
            objects[document["kind"]] = document
kustomization = yaml.safe_load(read("kubernetes", "kustomization.yaml"))
check(sorted(kustomization["resources"]) == manifests, f"kustomization.yaml lists {kustomization['resources']}, the folder has {manifests}")
for kind in ["Deployment", "Service", "PodDisruptionBudget", "HorizontalPodAutoscaler", "Job", "ConfigMap", "NetworkPolicy"]:
    check(kind in objects, f"deploy/kubernetes has no {kind}")
pod = objects["Deployment"]["spec"]["template"]
container = pod["spec"]["containers"][0]
check(container["readinessProbe"]["httpGet"]["path"] == "/readyz", "readiness must probe /readyz")
check(container["livenessProbe"]["httpGet"]["path"] == "/healthz", "liveness must probe /healthz")
check(pod["spec"]["securityContext"]["runAsNonRoot"] is True, "pods must run as non-root")
check(container["securityContext"]["readOnlyRootFilesystem"] is True, "the root filesystem must be read-only")
check(pod["metadata"]["annotations"].get("prometheus.io/port") == "9090" and "--metrics-port=9090" in container["args"],
      "the metrics port must be annotated and served")
check("limits" in container["resources"] and "requests" in container["resources"], "resources must be set")
check(any(e.get("valueFrom", {}).get("secretKeyRef") for e in container["env"]), "DATABASE_URL must come from a Secret")
check(container["envFrom"][0]["configMapRef"]["name"] == objects["ConfigMap"]["metadata"]["name"], "the ConfigMap must be used")
job = objects["Job"]["spec"]["template"]["spec"]["containers"][0]
check(job["args"][0] == "migrate", "the Job must run attest migrate")
ok(f"kubernetes ({len(paths)} objects valid against 1.37, strict; probes, non-root, read-only root, metrics)")

# The arguments the manifests and units pass exist: `attest serve` and `migrate` accept them.
serve_help = run([ATTEST, "serve", "--help"]).stdout
for option in ["--metrics-port", "--trusted-proxy", "--public-url", "--database-read-url", "--log-format"]:
    check(option in serve_help, f"attest serve has no {option}")
migrate_help = run([ATTEST, "migrate", "--help"]).stdout
for option in ["--server-login", "--server-password-file"]:
    check(option in migrate_help, f"attest migrate has no {option}")
ok("the options deploy/ uses exist")

# compose: parsed; PostgreSQL, a one-shot migrate, two servers after it, nginx in front at
# the address the servers trust.
compose = yaml.safe_load(read("compose.yaml"))
services = compose["services"]
check(set(services) == {"postgres", "migrate", "attest-1", "attest-2", "nginx"}, f"compose services: {sorted(services)}")
check(services["migrate"]["restart"] == "no", "migrate must be a one-shot service")
for name in ["attest-1", "attest-2"]:
    server = services[name]
    check(server["depends_on"]["migrate"]["condition"] == "service_completed_successfully", f"{name} must wait for migrate")
    check(server["read_only"] is True and server["user"].split(":")[0] != "0", f"{name} must be non-root with a read-only root")
    proxy = services["nginx"]["networks"]["backend"]["ipv4_address"]
    check(f"--trusted-proxy {proxy}" in " ".join(server["command"]), f"{name} must trust X-Forwarded-For from nginx ({proxy}) only")
check("./nginx.conf:/etc/nginx/nginx.conf:ro" in services["nginx"]["volumes"], "nginx must use deploy/nginx.conf")
check("--server-login attest_server" in services["migrate"]["command"][0], "migrate must create the server's own login")
ok("compose.yaml (5 services, migrate first, servers non-root and trusting nginx only)")

# Patroni: its own validator finds nothing but this machine lacking the addresses; synchronous.
patroni = yaml.safe_load(read("patroni", "patroni.yml"))
check(patroni["bootstrap"]["dcs"]["synchronous_mode"] is True, "Patroni must run in synchronous mode")
result = run(["patroni", "--validate-config", os.path.join(DEPLOY, "patroni", "patroni.yml")])
complaints = [line for line in (result.stdout + result.stderr).splitlines()
              if line.strip() and "is already in use" not in line and "is not reachable" not in line]
check(not complaints, f"patroni --validate-config: {complaints}")
broken = write("patroni.yml", read("patroni", "patroni.yml").replace("loop_wait: 2", "loop_wait: two"))
check(run(["patroni", "--validate-config", broken]).returncode != 0, "patroni --validate-config did not notice a wrong type")
ok("patroni.yml (validated by patroni, synchronous_mode)")

# Containerfile: two stages, static stdlib, non-root, health check, ports.
containerfile = read("Containerfile")
check(len(re.findall(r"^FROM ", containerfile, re.M)) == 2, "the Containerfile must have two stages")
for needle in ["--static-swift-stdlib", "USER 10001", "HEALTHCHECK", "/healthz", "EXPOSE 8080 9090", "libpq5", "tzdata",
               "ca-certificates", 'ENTRYPOINT ["/usr/local/bin/attest"]']:
    check(needle in containerfile, f"the Containerfile lacks {needle}")
ok("Containerfile (two stages, static stdlib, non-root, HEALTHCHECK, ports)")

# Citus: a coordinator and two workers pinned to Citus 13 on PostgreSQL 15, SET LOCAL propagated
# (the campus setting row-level security reads), and the distribution script the binary prints.
citus = yaml.safe_load(read("citus", "compose.yaml"))
nodes = {name: service for name, service in citus["services"].items() if name != "register"}
check(set(nodes) == {"coordinator", "worker-1", "worker-2"}, f"citus services: {sorted(citus['services'])}")
for name, service in nodes.items():
    check(re.fullmatch(r"docker\.io/citusdata/citus:13\.\d+\.\d+-pg15", service["image"]) is not None, f"{name}: {service['image']}")
    check("citus.propagate_set_commands=local" in service["command"], f"{name} must propagate SET LOCAL to the workers")
check(run([ATTEST, "citus", "script"]).stdout == read("citus", "distribute.sql"), "deploy/citus/distribute.sql differs from `attest citus script`")
ok("citus/compose.yaml (Citus 13 on PostgreSQL 15, SET LOCAL propagated, the script the binary prints)")
