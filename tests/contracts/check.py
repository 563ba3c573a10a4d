#!/usr/bin/env python3
"""`make contracts`: every JSON document the tools write, made by the real binaries, held to
docs/contracts.md: its schema version as written there, every field listed as always present
there, and no field the page does not list. Each comparison is also run on a tampered copy (a
field added, a field taken away) and must fail there.

Standard library only; BIN_DIR names the built binaries. Prints one PASS/FAIL line per check
and `N passed, N failed`.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
PAGE = REPO / "docs" / "contracts.md"
TIMEOUT_S = 30

# Each section of the page, by its heading, and the document it describes.
SECTIONS = {
    "The status document": "status",
    "A transcript": "transcript",
    "A conformance report": "check",
    "The check list": "check-list",
    "A fleet summary": "fleet-summary",
    "A fleet report": "fleet-report",
}

FIELDS = re.compile(r"^- Fields(?: of `([^`]+)`)?: (.*)$")
VERSION = re.compile(r'^- Version: `"(\w+)": "([^"]+)"`')


class Contract:
    def __init__(self, heading: str) -> None:
        self.heading = heading
        self.version: tuple[str, str] | None = None
        # path ("" for the top level, "streams[]", "streams[].types[]") -> (always, optional)
        self.fields: dict[str, tuple[list[str], list[str]]] = {}


def parse(page: str) -> dict[str, Contract]:
    contracts, current = {}, None
    for line in page.splitlines():
        if line.startswith("## "):
            title = line[3:].strip()
            current = Contract(title) if title in SECTIONS else None
            if current:
                contracts[SECTIONS[title]] = current
            continue
        if current is None:
            continue
        if m := VERSION.match(line):
            current.version = (m.group(1), m.group(2))
        elif m := FIELDS.match(line):
            always_text, _, optional_text = m.group(2).partition("(optional:")
            names = lambda text: re.findall(r"`([^`]+)`", text)  # noqa: E731
            current.fields[m.group(1) or ""] = (names(always_text), names(optional_text))
    return contracts


def at(doc, path: str) -> list[dict]:
    """The objects at `path` (`a`, `a[]`, `a[].b[]`) in `doc`."""
    nodes = [doc]
    for part in filter(None, path.split(".")):
        key, many = part.removesuffix("[]"), part.endswith("[]")
        found = []
        for node in nodes:
            value = node.get(key) if isinstance(node, dict) else None
            if value is None:
                continue
            found.extend(value if many else [value])
        nodes = found
    return [n for n in nodes if isinstance(n, dict)]


def problems(contract: Contract, doc: dict) -> list[str]:
    """What of `doc` breaks `contract` (empty: it holds)."""
    out = []
    if contract.version is None:
        return ["the page gives no version"]
    key, value = contract.version
    if doc.get(key) != value:
        out.append(f"{key} is {doc.get(key)!r}, the page says {value!r}")
    for path, (always, optional) in contract.fields.items():
        objects = at(doc, path)
        if not objects:
            out.append(f"no {path or 'top level'} to compare (the test made none)")
        for obj in objects:
            where = path or "top level"
            missing = [f for f in always if f not in obj]
            unlisted = [f for f in obj if f not in always and f not in optional]
            if missing:
                out.append(f"{where}: missing {missing}")
            if unlisted:
                out.append(f"{where}: not on the page: {unlisted}")
    return out


def tampered(contract: Contract, doc: dict) -> list[dict]:
    """Copies that must fail: one with an unlisted field, one without a listed one."""
    added = copy.deepcopy(doc)
    added["zz_not_on_the_page"] = 1
    removed = copy.deepcopy(doc)
    always = contract.fields.get("", ([], []))[0]
    droppable = [f for f in always if contract.version is None or f != contract.version[0]]
    if droppable:
        removed.pop(droppable[-1], None)
    return [added, removed]


# ---- making the documents ------------------------------------------------------------------

class Run:
    def __init__(self, bin_dir: Path, work: Path) -> None:
        self.server_bin = bin_dir / "xdsloop-server"
        self.client_bin = bin_dir / "xdsloop-client"
        self.work = work
        self.procs: list[subprocess.Popen] = []

    def spawn(self, argv: list, **kwargs) -> subprocess.Popen:
        proc = subprocess.Popen([str(a) for a in argv], stdin=subprocess.DEVNULL, **kwargs)
        self.procs.append(proc)
        return proc

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(5)

    def start_server(self) -> str:
        fixtures = self.work / "fixtures"
        shutil.copytree(REPO / "fixtures" / "demo", fixtures)
        self.transcript = self.work / "server.jsonl"
        server = self.spawn([self.server_bin, "--fixtures", fixtures, "--listen", "127.0.0.1:0",
                             "--record", self.transcript], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True,
                            env=dict(os.environ, NO_COLOR="1"))
        first = server.stdout.readline()
        if " listening on " not in first:
            raise SystemExit(f"xdsloop-server did not start: {first!r}")
        return first.split()[-1]

    def status(self, addr: str) -> dict:
        with urllib.request.urlopen(f"http://{addr}/status", timeout=5) as response:
            return json.load(response)

    def client_json(self, args: list) -> dict:
        done = subprocess.run([str(self.client_bin), *map(str, args)], capture_output=True,
                              text=True, timeout=TIMEOUT_S)
        try:
            return json.loads(done.stdout)
        except ValueError:
            raise SystemExit(f"xdsloop-client {' '.join(map(str, args))} (exit "
                             f"{done.returncode}) printed no JSON: {done.stderr[-500:]}")

    def documents(self) -> dict[str, dict]:
        addr = self.start_server()
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        # One client stays (an open stream), one leaves (a recently closed one).
        self.spawn([self.client_bin, "--server", addr, "--node-id", "contracts-open"], **quiet)
        subprocess.run([str(self.client_bin), "--server", addr, "--node-id", "contracts-closed",
                        "--exit-after", "1"], timeout=TIMEOUT_S, **quiet)
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            status = self.status(addr)
            open_types = [t for s in status["streams"] for t in s["types"]]
            if open_types and status["recently_closed"]:
                break
            if time.monotonic() > deadline:
                raise SystemExit(f"no open and closed stream in /status: {status}")
            time.sleep(0.1)  # an HTTP endpoint: nothing to wait on
        listing = self.client_json(["check", "--list", "--output", "json"])
        first_check = listing["checks"][0]["id"]
        report = self.client_json(["check", "--server", addr, "--only", first_check,
                                   "--output", "json"])
        fleet_file = self.work / "fleet.json"
        summary = self.client_json(["fleet", "--server", addr, "--clients", "2", "--duration",
                                    "1", "--report", fleet_file, "--output", "json"])
        header = json.loads(self.transcript.read_text().splitlines()[0])
        return {"status": status, "transcript": header, "check": report,
                "check-list": listing, "fleet-summary": summary,
                "fleet-report": json.loads(fleet_file.read_text())}


def main() -> int:
    bin_dir = Path(os.environ.get("BIN_DIR", REPO / "target" / "debug"))
    contracts = parse(PAGE.read_text())
    passed = failed = 0

    def check(name: str, ok: bool, why: str = "") -> None:
        nonlocal passed, failed
        passed, failed = passed + ok, failed + (not ok)
        print(("PASS " if ok else "FAIL ") + name + ("" if ok else f": {why}"), flush=True)

    missing = [s for s in SECTIONS.values() if s not in contracts]
    check("docs/contracts.md describes every document", not missing, f"no section for {missing}")
    work = Path(tempfile.mkdtemp(prefix="xdsloop-contracts-"))
    run = Run(bin_dir, work)
    try:
        docs = run.documents()
    finally:
        run.stop()
        shutil.rmtree(work, ignore_errors=True)
    for name, contract in contracts.items():
        found = problems(contract, docs[name])
        check(f"{contract.heading}: {contract.version and '='.join(contract.version)} and its "
              "fields as docs/contracts.md lists them", not found, "; ".join(found))
        caught = [bool(problems(contract, bad)) for bad in tampered(contract, docs[name])]
        check(f"{contract.heading}: the comparison fails on a copy with a field added and on "
              "one with a field taken away", all(caught), f"caught: {caught}")
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
