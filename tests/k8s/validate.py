#!/usr/bin/env python3
"""`make k8s-manifests`: every manifest in deploy/k8s/ against the Kubernetes schemas, offline.

The validator is PyPI's `kubernetes-validate` (it ships the Kubernetes OpenAPI schemas), in a
cached virtual environment (tests/k8s/.venv, pinned requirements.txt, created once). Where the
machine allows it (root, `unshare`), validation runs in a network namespace with no network at
all, so a pass shows that it needs none.

Checks, one PASS/FAIL line each:
- every manifest validates in strict mode (unknown fields are errors);
- deliberately broken copies fail (the validator is not a rubber stamp);
- the fixtures ConfigMap holds fixtures/demo byte for byte;
- the Job's shard count agrees with its completions and parallelism, and its shard comes from
  JOB_COMPLETION_INDEX;
- the manifests' command lines are accepted by the real binaries (the server starts with the
  Deployment's flags; the fleet runs one shard with the Job's flags, values from its ConfigMap).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
MANIFESTS = REPO / "deploy" / "k8s"
BIN_DIR = Path(os.environ.get("BIN_DIR") or REPO / "target" / "debug")
VENV_TIMEOUT_S = 600

if os.environ.get("XDSLOOP_K8S_IN_VENV") != "1":
    # Re-run this script with the venv's python (it has PyYAML and the validator).
    def ensure_venv(venv: Path, requirements: Path) -> Path:
        stamp_text = hashlib.sha256(requirements.read_bytes() + sys.version.encode()).hexdigest()
        stamp = venv / ".xdsloop-stamp"
        python = venv / "bin" / "python"
        if stamp.exists() and stamp.read_text() == stamp_text and python.exists():
            return python
        if venv.exists():
            shutil.rmtree(venv)
        print(f"creating {venv} and installing {requirements.name} from PyPI", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True,
                       timeout=VENV_TIMEOUT_S)
        subprocess.run([str(python), "-m", "pip", "--disable-pip-version-check", "--no-input",
                        "install", "-q", "-r", str(requirements)], check=True,
                       timeout=VENV_TIMEOUT_S)
        stamp.write_text(stamp_text)
        return python

    python = ensure_venv(HERE / ".venv", HERE / "requirements.txt")
    env = dict(os.environ, XDSLOOP_K8S_IN_VENV="1")
    sys.exit(subprocess.run([str(python), __file__, *sys.argv[1:]], env=env).returncode)

import yaml  # noqa: E402  (from the venv)

VALIDATOR = Path(sys.executable).parent / "kubernetes-validate"


def offline_prefix() -> list[str]:
    """`unshare -n` where it works: the validator then runs with no network at all."""
    unshare = shutil.which("unshare")
    if unshare and subprocess.run([unshare, "-n", "true"], capture_output=True).returncode == 0:
        return [unshare, "-n"]
    return []


OFFLINE = offline_prefix()


def validate(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*OFFLINE, str(VALIDATOR), "--strict", "--quiet", str(path)],
                          capture_output=True, text=True, timeout=300)


class Checks:
    def __init__(self) -> None:
        self.passed = 0
        self.failed = 0

    def check(self, name: str, ok: bool, why: str = "") -> bool:
        if ok:
            self.passed += 1
            print(f"PASS {name}", flush=True)
        else:
            self.failed += 1
            print(f"FAIL {name}" + (f": {why}" if why else ""), flush=True)
        return ok


def documents(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def find(docs: list[dict], kind: str) -> dict:
    return next(d for d in docs if d["kind"] == kind)


# Each breaks one thing the schemas forbid; each copy must fail validation.
def broken_copies() -> list[tuple[str, str, callable]]:
    def job(edit):
        return lambda docs: edit(find(docs, "Job"))

    def deployment(edit):
        return lambda docs: edit(find(docs, "Deployment"))

    def container(spec: dict) -> dict:
        return spec["spec"]["template"]["spec"]["containers"][0]

    return [
        ("fleet-job.yaml", "completions as a word",
         job(lambda j: j["spec"].__setitem__("completions", "twenty"))),
        ("fleet-job.yaml", "a misspelled container field",
         job(lambda j: container(j).__setitem__("imagePulPolicy", "Always"))),
        ("fleet-job.yaml", "an env source that is not a list",
         job(lambda j: container(j).__setitem__("envFrom", {"configMapRef": {"name": "x"}}))),
        ("server.yaml", "a pod without containers",
         deployment(lambda d: d["spec"]["template"]["spec"].pop("containers"))),
        ("server.yaml", "a port number as text",
         deployment(lambda d: container(d)["ports"][0].__setitem__("containerPort", "xds"))),
    ]


def run_server_with_deployment_flags(checks: Checks, args: list[str]) -> None:
    flags = [a for a in args if not a.startswith(("--fixtures=", "--listen="))]
    command = [str(BIN_DIR / "xdsloop-server"), *flags,
               "--fixtures", str(REPO / "fixtures" / "demo"), "--listen", "127.0.0.1:0"]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = server.stdout.readline() if server.stdout else ""
    finally:
        server.terminate()
        try:
            _, err = server.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            _, err = server.communicate()
    checks.check("xdsloop-server starts with the Deployment's flags", "listening on" in first,
                 f"{first!r} {err[-500:]}")


def run_fleet_with_job_flags(checks: Checks, command: list[str], args: list[str],
                             params: dict) -> None:
    # The run's own values, but small and now: 20 nodes against a port nothing listens on.
    values = dict(params, NODES="20", SERVER="127.0.0.1:9", DURATION="0.3s",
                  START_AT=f"{time.time():.3f}", JOB_COMPLETION_INDEX="0")
    expanded = [re.sub(r"\$\((\w+)\)", lambda m: values[m.group(1)], a) for a in args]
    argv = [str(BIN_DIR / command[0]), *command[1:], *expanded]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    report = [l for l in done.stdout.splitlines() if l.startswith('{"format":')]
    checks.check("xdsloop-client fleet runs one shard with the Job's flags and prints its report",
                 done.returncode == 0 and len(report) == 1,
                 f"exit {done.returncode}: {done.stderr[-800:]}")


def main() -> int:
    checks = Checks()
    where = "with no network (unshare -n)" if OFFLINE else "(unshare unavailable: network not cut)"
    manifests = sorted(MANIFESTS.glob("*.yaml"))
    for path in manifests:
        result = validate(path)
        checks.check(f"{path.relative_to(REPO)} validates against the Kubernetes schemas {where}",
                     result.returncode == 0, (result.stdout + result.stderr).strip())

    with tempfile.TemporaryDirectory(prefix="xdsloop-k8s-") as tmp:
        for name, what, edit in broken_copies():
            docs = documents(MANIFESTS / name)
            edit(docs)
            copy = Path(tmp) / f"broken-{name}"
            copy.write_text(yaml.safe_dump_all(docs))
            result = validate(copy)
            checks.check(f"a copy of {name} with {what} fails validation",
                         result.returncode != 0, "the validator accepted it")

    server_docs = documents(MANIFESTS / "server.yaml")
    data = find(server_docs, "ConfigMap")["data"]
    demo = {p.name: p.read_text() for p in (REPO / "fixtures" / "demo").iterdir()}
    checks.check("the fixtures ConfigMap holds fixtures/demo byte for byte", data == demo,
                 f"keys {sorted(data)} vs {sorted(demo)}")

    job = find(documents(MANIFESTS / "fleet-job.yaml"), "Job")
    params = find(documents(MANIFESTS / "fleet-run.yaml"), "ConfigMap")["data"]
    container = job["spec"]["template"]["spec"]["containers"][0]
    shards = int(params["SHARDS"])
    checks.check("the Job runs SHARDS (fleet-run.yaml) indexed pods, all at once",
                 job["spec"]["completionMode"] == "Indexed"
                 and job["spec"]["completions"] == shards == job["spec"]["parallelism"],
                 f"completions {job['spec']['completions']}, SHARDS {shards}")
    checks.check("each pod's shard is $(JOB_COMPLETION_INDEX)/$(SHARDS)",
                 "--shard=$(JOB_COMPLETION_INDEX)/$(SHARDS)" in container["args"])

    if (BIN_DIR / "xdsloop-server").exists() and (BIN_DIR / "xdsloop-client").exists():
        deployment = find(server_docs, "Deployment")
        server_container = deployment["spec"]["template"]["spec"]["containers"][0]
        run_server_with_deployment_flags(checks, server_container["args"])
        run_fleet_with_job_flags(checks, container["command"], container["args"], params)
    else:
        checks.check(f"the binaries in {BIN_DIR}", False, "build them first (make bins)")

    print(f"{checks.passed} passed, {checks.failed} failed")
    return 1 if checks.failed or not checks.passed else 0


if __name__ == "__main__":
    sys.exit(main())
