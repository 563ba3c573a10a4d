#!/usr/bin/env python3
"""`make conformance`, second half: `xdsloop-client check --output junit` read by a JUnit parser
from PyPI (junitparser, in tests/conformance/.venv, created once from the pinned
requirements.txt), as a CI system would read it.

The server is xdsloop-server with the push-storm scenario (every CDS ACK answered with the same
clusters again), so the run holds all three results: resource-update.1 FAILs (a SHOULD: the
storm resends what the client holds), rpc-services.1 PASSes (a CDS resend is never taken for
the answer to another type), resource-hints.11 SKIPs (the demo serves one listener). Then
broken copies of the document must be refused by the same reading.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
BIN_DIR = Path(os.environ.get("BIN_DIR") or REPO / "target" / "debug")
VENV_TIMEOUT_S = 600
RUN_TIMEOUT_S = 300

if os.environ.get("XDSLOOP_JUNIT_IN_VENV") != "1":
    # Re-run this script with the venv's python (it has junitparser).
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
    env = dict(os.environ, XDSLOOP_JUNIT_IN_VENV="1")
    sys.exit(subprocess.run([str(python), __file__, *sys.argv[1:]], env=env).returncode)

from junitparser import Failure, JUnitXml, Skipped  # noqa: E402  (from the venv)

from run import start_server, stop_server  # noqa: E402  (this directory's run.py)

CHECKS = "resource-update.1,rpc-services.1,resource-hints.11"
# What each check must come out as, and what its message must hold.
EXPECTED = {
    "resource-update.1": ("failure", ["resource-update.1", "(SHOULD)",
                                      "The management server should only send updates"]),
    "rpc-services.1": ("pass", []),
    "resource-hints.11": ("skipped", ["needs 3 lds names"]),
}


def problems(path: Path) -> list[str]:
    """What is wrong with the JUnit document at `path`, read by junitparser; empty if nothing."""
    try:
        xml = JUnitXml.fromfile(str(path))
    except Exception as e:  # a parse error is the finding
        return [f"not a JUnit document: {e}"]
    found: list[str] = []
    cases = {}
    for suite in xml:
        seen = list(suite)
        if suite.tests != len(seen):
            found.append(f"testsuite {suite.name!r} says tests={suite.tests}, holds {len(seen)}")
        failures = sum(1 for c in seen if any(isinstance(r, Failure) for r in c.result))
        if suite.failures != failures:
            found.append(f"testsuite {suite.name!r} says failures={suite.failures}, holds {failures}")
        skipped = sum(1 for c in seen if any(isinstance(r, Skipped) for r in c.result))
        if suite.skipped != skipped:
            found.append(f"testsuite {suite.name!r} says skipped={suite.skipped}, holds {skipped}")
        for case in seen:
            cases[case.name] = case
    for name, (kind, phrases) in EXPECTED.items():
        case = cases.get(name)
        if case is None:
            found.append(f"no testcase {name}")
            continue
        if not case.classname:
            found.append(f"{name}: no classname")
        results = list(case.result)
        got = "pass" if not results else ("failure" if isinstance(results[0], Failure)
                                          else "skipped" if isinstance(results[0], Skipped)
                                          else type(results[0]).__name__)
        if got != kind:
            found.append(f"{name}: {got}, expected {kind}")
            continue
        message = results[0].message if results else ""
        for phrase in phrases:
            if phrase not in (message or ""):
                found.append(f"{name}: the {kind} message lacks {phrase!r}: {message!r}")
    return found


def broken_copies(text: str) -> dict[str, str]:
    """Copies of a good document, each wrong in one way a reader must notice."""
    return {
        "truncated": text[: len(text) // 2],
        "a count that lies": text.replace('failures="1"', 'failures="0"'),
        "a failure without its sentence": text.replace(
            "The management server should only send updates", "something went wrong", 1),
        "a testcase lost": text.replace('name="rpc-services.1"', 'name="other"', 1),
    }


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="xdsloop-junit-") as tmp:
        fixtures = Path(tmp) / "fixtures"
        shutil.copytree(REPO / "fixtures" / "demo", fixtures)
        storm = REPO / "examples" / "scenarios" / "push-storm.yaml"
        server, addr = start_server(fixtures, "--scenario", str(storm))
        try:
            command = [str(BIN_DIR / "xdsloop-client"), "check", "--server", addr,
                       "--only", CHECKS, "--output", "junit"]
            print("$ " + " ".join(command[1:]) + " > check.xml", flush=True)
            run = subprocess.run(command, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
        finally:
            stop_server(server)
        if run.returncode != 0:
            print(f"check exited {run.returncode} (a SHOULD FAIL alone exits 0): {run.stderr}")
            return 1
        good = Path(tmp) / "check.xml"
        good.write_text(run.stdout)
        found = problems(good)
        if found:
            print("the JUnit document is wrong:\n  " + "\n  ".join(found))
            print(run.stdout)
            return 1
        print("junitparser read it: resource-update.1 failure quoting its sentence, "
              "rpc-services.1 passed, resource-hints.11 skipped; the counts hold")
        for what, text in broken_copies(run.stdout).items():
            copy = Path(tmp) / "broken.xml"
            copy.write_text(text)
            if not problems(copy):
                print(f"a broken copy passed the reading: {what}")
                return 1
        print(f"{len(broken_copies(run.stdout))} broken copies refused")
        return 0


if __name__ == "__main__":
    sys.exit(main())
