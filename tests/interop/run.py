#!/usr/bin/env python3
"""Interop test: gRPC's proxyless xDS client (PyPI `grpcio`) follows xdsloop-server's hot pushes.

`python3 tests/interop/run.py` (standard library only) builds the server, makes the cached
virtual environment (tests/interop/.venv, the pinned packages of requirements.txt, pytest among
them) and runs test_interop.py there with pytest and the xdsloop plugin (python/xdsloop): every
server of the run is an `XdsServer` from the plugin's `xds_server_factory`. The backends and
the clients run in the venv. Each test prints one PASS/FAIL line per check and fails if any
check did; pytest ends with `N passed, N failed`. Every wait is bounded and every process is
stopped by its pid, also on Ctrl-C.

This module holds the main flow and the TLS phase (test_interop.py calls them).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent / "python"))

import csds_check  # noqa: E402
import faults  # noqa: E402
import fixture_edits as fx  # noqa: E402
import harness  # noqa: E402
import judge  # noqa: E402
import recipes  # noqa: E402
import tls_phase as tls  # noqa: E402
from harness import Proc, Setup  # noqa: E402
from status_checks import (AUTHORITY, CLIENT_NODE, FEDERATED_NODE, PUSH_TIMEOUT_S,  # noqa: E402
                           client_synced, federated_synced, fetch_status, rejected_in_status,
                           ttl_unbeaten, wait_status)
from xdsloop import WaitTimeout, XdsServer  # noqa: E402

ServerFactory = Callable[..., XdsServer]
HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
TARGET = f"xds:///{fx.LISTENER}"
# Bounds: the first resolution includes the client's ADS handshake and four resource types;
# a hot push after that takes well under a second, so a few seconds means "it didn't push".
FIRST_CALL_TIMEOUT_S = 30
START_TIMEOUT_S = 20
# How many calls in a row must agree before the run believes the client moved.
RUN = 5
# Calls observed after a rejected edit was logged, all of which must still reach the old backend.
STEADY_CALLS = 20
# A TTL for gRPC (S14, S15), and calls watched after it is taken: 3 s at one per 50 ms, over
# twice the TTL, long enough to see heartbeats (none) or an expiry (none in gRPC).
TTL = "1s"
TTL_CALLS = 60


class Report:
    def __init__(self) -> None:
        self.passed = 0
        self.failed = 0
        # What a client did where no gRFC or spec sentence promises an outcome, or where it is
        # known to deviate: printed and kept, never a pass or a failure.
        self.observed: list[str] = []

    def check(self, name: str, ok: bool, why: str = "") -> bool:
        if ok:
            self.passed += 1
            print(f"PASS {name}", flush=True)
        else:
            self.failed += 1
            print(f"FAIL {name}" + (f": {why}" if why else ""), flush=True)
        return ok

    def observe(self, name: str, what: str) -> None:
        self.observed.append(f"{name}: {what}")
        print(f"SEEN {name}: {what}", flush=True)


class Calls:
    """The client's output: one `SEQ OK NAME` / `SEQ ERR CODE ...` line per call."""

    def __init__(self, client: Proc) -> None:
        self.client = client

    def mark(self) -> int:
        return self.client.out.mark()

    @staticmethod
    def parse(lines: list[str]) -> list[str]:
        """Each call as the answering backend's name, or `ERR:<code>`."""
        calls = []
        for line in lines:
            parts = line.split(" ", 3)
            if len(parts) >= 3:
                calls.append(parts[2] if parts[1] == "OK" else f"ERR:{parts[2]}")
        return calls

    def wait_moved(self, name: str, since: int, timeout: float) -> tuple[bool, str]:
        """Waits for RUN calls in a row answered by `name`, among calls made after `since`."""
        def moved(lines):
            calls = self.parse(lines[since:])
            return len(calls) >= RUN and all(c == name for c in calls[-RUN:])
        ok = self.client.out.wait(moved, timeout)
        return bool(ok), self.describe(since)

    def wait_steady(self, name: str, since: int, timeout: float,
                    count: int = STEADY_CALLS) -> tuple[bool, str]:
        """Waits for `count` calls after `since`; all of them must be answered by `name`."""
        def enough(lines):
            calls = self.parse(lines[since:])
            return calls[:count] if len(calls) >= count else None
        calls = self.client.out.wait(enough, timeout)
        ok = bool(calls) and all(c == name for c in calls)
        return ok, self.describe(since)

    def describe(self, since: int) -> str:
        calls = self.parse(self.client.out.lines[since:])
        counts = {c: calls.count(c) for c in dict.fromkeys(calls)}
        return f"{len(calls)} calls since the edit: {counts}; last: {calls[-RUN:]}"


def wait_rejection(server: XdsServer, since: int, needles: list[str]) -> tuple[bool, str]:
    """Waits for a warn/error log line naming the file, then for every needle in the log
    (lines after `since`, a `server.log_mark()`)."""
    def rejected(new):
        logged = any(("WARN" in l or "ERROR" in l) and fx.ENDPOINTS_FILE in l for l in new)
        return logged and all(any(n in l for l in new) for n in needles)
    try:
        server.wait_log(rejected, PUSH_TIMEOUT_S, since)
        return True, ""
    except WaitTimeout:
        return False, f"no warn line naming {fx.ENDPOINTS_FILE} and {needles} in the server log"


def ttl(r: Report, calls: Calls, admin: str, eds: Path, ports: dict) -> None:
    """A TTL'd resource to gRPC (S14, S15): it advertises xds.config.resource-in-sotw, so it
    gets the `Resource` wrapper; it does not advertise supports-resource-ttl (and would NACK a
    heartbeat), so it gets none."""
    a, b = ports["A"], ports["B"]
    since = calls.mark()
    fx.write_in_place(eds, fx.endpoints_with_ttl(b, b, TTL))
    r.check(f"a {TTL} TTL on {fx.CLUSTER_A}'s endpoints: sent wrapped in Resource, gRPC takes it "
            "and calls move to B", *calls.wait_moved("B", since, PUSH_TIMEOUT_S))
    r.check(f"calls keep going to B for over twice the TTL ({TTL_CALLS} calls)",
            *calls.wait_steady("B", calls.mark(), PUSH_TIMEOUT_S + TTL_CALLS * 0.2, TTL_CALLS))
    r.check("/status: gRPC ACKed the TTL'd endpoints (held wrapped: ttl_resources 1), no NACK, "
            "no heartbeat sent to it",
            *wait_status(admin, ttl_unbeaten))
    since = calls.mark()
    fx.write_in_place(eds, fx.endpoints(a, b, f"{fx.CLUSTER_A} -> A, no TTL"))
    r.check("the TTL removed: calls move back to A", *calls.wait_moved("A", since, PUSH_TIMEOUT_S))


def start_backends(python: Path) -> tuple[dict[str, int], list[Proc]]:
    ports, procs = {}, []
    for name in ("A", "B"):
        proc = Proc(f"backend {name}", [str(python), str(HERE / "backend.py"), name])
        procs.append(proc)
        line = proc.out.wait(lambda ls: next((l for l in ls if l.startswith("listening ")), None),
                             START_TIMEOUT_S)
        if not line:
            raise Setup(f"backend {name} did not start\n{proc.tail()}")
        ports[name] = int(line.split()[1])
    return ports, procs


def start_server(servers: ServerFactory, work: Path, fixtures: Path,
                 extra: list[str] | None = None, name: str = "xdsloop-server") -> XdsServer:
    """An `XdsServer` from the pytest plugin's factory, on a free port, serving `fixtures`. Its
    log and transcript (every stream recorded) go to work/NAME/ (kept with --keep); the plugin
    stops it after the test and shows its log if the test failed."""
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    return servers(name=name, fixtures=fixtures, args=extra or [], workdir=work / slug,
                   env={"RUST_LOG": os.environ.get("INTEROP_RUST_LOG", "info")})


def write_bootstrap(work: Path, server_port: int) -> Path:
    """The example bootstrap from examples/, pointed at this run's server."""
    bootstrap = json.loads((REPO / "examples" / "grpc-bootstrap.json").read_text())
    bootstrap["xds_servers"][0]["server_uri"] = f"127.0.0.1:{server_port}"
    bootstrap["node"]["id"] = CLIENT_NODE
    path = work / "grpc-bootstrap.json"
    path.write_text(json.dumps(bootstrap, indent=2))
    return path


def write_federation_bootstrap(work: Path, server_port: int) -> Path:
    """examples/grpc-bootstrap-federation.json: no usable top-level server, the authority
    xdsloop.test served by this run's server, listener names from the xdstp template."""
    path = REPO / "examples" / "grpc-bootstrap-federation.json"
    bootstrap = json.loads(path.read_text())
    servers = bootstrap["authorities"][AUTHORITY]["xds_servers"]
    servers[0]["server_uri"] = f"127.0.0.1:{server_port}"
    bootstrap["node"]["id"] = FEDERATED_NODE
    out = work / "grpc-bootstrap-federation.json"
    out.write_text(json.dumps(bootstrap, indent=2))
    return out


def start_client(python: Path, bootstrap: Path, label: str = "grpc client") -> Proc:
    env = dict(os.environ, GRPC_XDS_BOOTSTRAP=str(bootstrap))
    if os.environ.get("INTEROP_GRPC_TRACE"):
        env["GRPC_TRACE"] = os.environ["INTEROP_GRPC_TRACE"]
        env["GRPC_VERBOSITY"] = "DEBUG"
    return Proc(label, [str(python), str(HERE / "client.py"), TARGET], env=env)


def federation(r: Report, python: Path, work: Path, server_port: int, admin: str,
               procs: list[Proc]) -> None:
    """A second gRPC client resolves the same target through xdstp:// names (gRFC A47)."""
    bootstrap = write_federation_bootstrap(work, server_port)
    client = start_client(python, bootstrap, "grpc federated client")
    procs.append(client)
    ok, why = Calls(client).wait_moved("B", 0, FIRST_CALL_TIMEOUT_S)
    r.check(f"federation: {TARGET} resolves through xdstp://{AUTHORITY}/ names and calls "
            "reach B", ok, why)
    r.check("federation: /status shows the client's xdstp:// names, context parameters "
            "sorted, every type ACKed", *wait_status(admin, federated_synced))


def scenario(r: Report, calls: Calls, server: XdsServer, admin: str, fixtures: Path,
             ports: dict, csds: tuple[Path, str]) -> None:
    a, b = ports["A"], ports["B"]
    eds, rds = fixtures / fx.ENDPOINTS_FILE, fixtures / fx.ROUTES_FILE

    ok, why = calls.wait_moved("A", 0, FIRST_CALL_TIMEOUT_S)
    answers = Calls.parse(calls.client.out.lines)
    r.check(f"{TARGET} resolves through xdsloop-server and calls reach A (LDS/RDS/CDS/EDS)",
            ok and "B" not in answers, why)
    connected = calls.mark()

    def edit(name, write, expect):
        since = calls.mark()
        before = Calls.parse(calls.client.out.lines[:since])[-1:]
        if before == [expect]:
            # A move to where the calls already go proves nothing: an earlier step failed.
            r.check(name, False, f"calls already reached {expect} before the edit")
            return
        write()
        r.check(name, *calls.wait_moved(expect, since, PUSH_TIMEOUT_S))

    edit("EDS edit by temp file + rename moves calls to B",
         lambda: fx.write_by_rename(eds, fx.endpoints(b, b, f"{fx.CLUSTER_A} -> B")), "B")
    edit("EDS edit in place moves calls back to A",
         lambda: fx.write_in_place(eds, fx.endpoints(a, b, f"{fx.CLUSTER_A} -> A")), "A")
    edit("EDS edit in place, in several writes, moves calls to B",
         lambda: fx.write_in_place(eds, fx.endpoints(b, b, f"{fx.CLUSTER_A} -> B"), 3), "B")

    for label, text, needles in (
        ("bad YAML", fx.endpoints_bad_yaml(a, b), []),
        ("unknown field", fx.endpoints_unknown_field(a, b), [fx.BOGUS_FIELD]),
    ):
        logged = server.log_mark()
        fx.write_in_place(eds, text)
        ok, why = wait_rejection(server, logged, needles)
        if ok:
            ok, why = wait_status(admin, rejected_in_status)
        r.check(f"{label} in {fx.ENDPOINTS_FILE} is rejected: logged, and shown in /status",
                ok, why)
        r.check(f"calls keep going to B after the {label} edit",
                *calls.wait_steady("B", calls.mark(), PUSH_TIMEOUT_S + STEADY_CALLS * 0.2))

    edit("fixed EDS fixture is pushed again: calls move to A",
         lambda: fx.write_in_place(eds, fx.endpoints(a, b, f"{fx.CLUSTER_A} -> A")), "A")
    edit(f"RDS edit routes calls to cluster {fx.CLUSTER_B} (B)",
         lambda: fx.write_by_rename(rds, fx.routes(fx.CLUSTER_B)), "B")
    edit(f"RDS edit routes calls back to cluster {fx.CLUSTER_A} (A)",
         lambda: fx.write_in_place(rds, fx.routes(fx.CLUSTER_A)), "A")

    failed = [c for c in Calls.parse(calls.client.out.lines[connected:]) if c.startswith("ERR")]
    r.check("no call failed once the client was connected", not failed,
            f"{len(failed)} failed calls: {sorted(set(failed))}")
    r.check("/status: the client's ADS SotW stream ACKed the served LDS/RDS/CDS/EDS, no NACK",
            *wait_status(admin, client_synced))
    python, server_csds = csds
    line = calls.client.out.wait(
        lambda ls: next((l for l in ls if l.startswith("csds ")), None), START_TIMEOUT_S)
    if line:
        grpc_csds = f"127.0.0.1:{line.split()[1]}"
        r.check("gRPC's CSDS and xdsloop-server's CSDS agree: every resource gRPC ACKed, at "
                "the same version and bytes",
                *csds_check.wait_agree(python, (grpc_csds, server_csds), CLIENT_NODE,
                                       PUSH_TIMEOUT_S))
    else:
        r.check("gRPC's CSDS and xdsloop-server's CSDS agree", False,
                "client.py printed no `csds PORT` line")
    r.check("xdsloop-server is still running", server.running)


# Calls the refused client must make, each failing, before the run believes it is refused.
REFUSED_CALLS = 2


def tls_scenario(r: Report, python: Path, servers: ServerFactory, work: Path, fixtures: Path,
                 procs: list[Proc]) -> None:
    """A second server on fresh fixtures with --tls-cert/--tls-key/--tls-client-ca, a gRPC
    client with `tls` channel credentials, and one whose certificate another CA signed."""
    certs = tls.make_certificates(work)
    server = start_server(servers, work, fixtures, tls.server_args(certs),
                          "xdsloop-server (mTLS)")
    port, admin = server.port, server.admin_address
    bootstrap = json.loads((REPO / "examples" / "grpc-bootstrap.json").read_text())
    path = tls.write_bootstrap(work, bootstrap, port, certs, "client", tls.TLS_NODE)
    client = start_client(python, path, "grpc client (mTLS)")
    procs.append(client)
    ok, why = Calls(client).wait_moved("A", 0, FIRST_CALL_TIMEOUT_S)
    r.check(f"over mTLS (bootstrap channel_creds `tls`, gRFC A65) {TARGET} resolves and calls "
            "reach A", ok, why)
    fetch = lambda a: tls.fetch_status(a, certs)  # noqa: E731
    r.check("/status over mTLS shows the gRPC client's verified identity on its stream "
            f"({tls.CLIENT_SPIFFE}, CN {tls.CLIENT_CN})",
            *wait_status(admin, tls.identity_shown, fetch=fetch))
    path = tls.write_bootstrap(work, bootstrap, port, certs, "rogue", tls.ROGUE_NODE)
    rogue = start_client(python, path, "grpc client (untrusted certificate)")
    procs.append(rogue)
    def made(lines):
        calls = Calls.parse(lines)
        return calls[:REFUSED_CALLS] if len(calls) >= REFUSED_CALLS else None
    calls = rogue.out.wait(made, PUSH_TIMEOUT_S + 10)
    r.check("a gRPC client whose certificate another CA signed is refused: its calls fail",
            bool(calls) and all(c.startswith("ERR") for c in calls), f"calls: {calls}")
    r.check("the server's /status names that refusal: not signed by --tls-client-ca",
            *wait_status(admin, tls.rogue_refused, fetch=fetch))
    r.check("xdsloop-server (mTLS) is still running", server.running)


def main_flow(r: Report, python: Path, servers: ServerFactory, work: Path, ports: dict,
              procs: list[Proc]) -> None:
    """One server on a copy of fixtures/grpc, one gRPC client: hot pushes, rejected edits,
    CSDS, a TTL, the scenario faults, federation, and the judge over all of it."""
    fixtures = work / "fixtures"
    fx.copy_with_ports(REPO / "fixtures" / "grpc", fixtures, ports["A"], ports["B"])
    server = start_server(servers, work, fixtures)
    admin = server.admin_address
    client = start_client(python, write_bootstrap(work, server.port))
    procs.append(client)
    csds = (python, server.address)
    scenario(r, Calls(client), server, admin, fixtures, ports, csds)
    ttl(r, Calls(client), admin, fixtures / fx.ENDPOINTS_FILE, ports)
    faults.check_faults(r, Calls(client), admin, fixtures / fx.ENDPOINTS_FILE, ports,
                        wait_status, PUSH_TIMEOUT_S)
    federation(r, python, work, server.port, admin, procs)
    status = fetch_status(admin)
    r.check("the conformance judge found no client violation by gRPC's xDS clients over "
            "the whole run (C rules)", *judge.no_violations(status))
    r.check("that check fails on a copy of /status with a violation added",
            *judge.notices_a_violation(status))


def tls_flow(r: Report, python: Path, servers: ServerFactory, work: Path, ports: dict,
             procs: list[Proc]) -> None:
    """The TLS phase on fixtures of its own, as first written."""
    tls_fixtures = work / "fixtures-tls"
    fx.copy_with_ports(REPO / "fixtures" / "grpc", tls_fixtures, ports["A"], ports["B"])
    tls_scenario(r, python, servers, work, tls_fixtures, procs)


def pytest_args(args: argparse.Namespace, binary: Path, work: Path) -> list[str]:
    """The pytest command line of a run: test_interop.py's tests for the run's selection,
    the plugin from python/ (the source tree: the wheel is tested by make python-package),
    this server binary."""
    tests = HERE / "test_interop.py"
    if args.recipes is None:
        selected = [str(tests)]
    else:
        names = list(recipes.RECIPES) if args.recipes == "all" else args.recipes.split(",")
        unknown = [n for n in names if n not in recipes.RECIPES]
        if unknown:
            raise Setup(f"no recipe {unknown}; there are: {', '.join(recipes.RECIPES)}")
        selected = [f"{tests}::test_recipe[{name}]" for name in names]
    return ["-p", "xdsloop.pytest_plugin", "-p", "no:cacheprovider", "--capture=no",
            "--rootdir", str(HERE), "--xdsloop-server", str(binary),
            "--interop-work", str(work), "--interop-client", args.client, *selected]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true", help="keep the temp directory")
    parser.add_argument("--recipes", metavar="NAMES", default=None,
                        help="run only the cookbook's recipes (comma-separated: "
                             f"{','.join(recipes.RECIPES)}; 'all' for every one)")
    parser.add_argument("--client", choices=("grpcio", "grpc-js"), default="grpcio",
                        help="the xDS client the recipes run: gRPC C-core (grpcio, PyPI) or "
                             "@grpc/grpc-js-xds (npm); grpc-js runs only the recipes")
    args = parser.parse_args()
    if args.client == "grpc-js" and args.recipes is None:
        args.recipes = "all"
    harness.install_cleanup()
    work = Path(tempfile.mkdtemp(prefix="xdsloop-interop-"))
    try:
        problem = fx.check_fixture(REPO / "fixtures" / "grpc")
        if problem:
            raise Setup(problem)
        python = harness.ensure_venv(HERE / ".venv", HERE / "requirements.txt")
        # XDSLOOP_SERVER runs a prebuilt (or another) server binary instead of building one.
        override = os.environ.get("XDSLOOP_SERVER")
        binary = Path(override) if override else harness.build_server(REPO)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO / "python"), str(HERE)]))
        env.pop("XDSLOOP_SERVER", None)
        argv = [str(python), "-m", "pytest", *pytest_args(args, binary, work)]
        print("+ " + " ".join(argv), flush=True)
        return subprocess.run(argv, cwd=HERE, env=env).returncode
    except Setup as err:
        print(f"setup failed: {err}", file=sys.stderr)
        return 1
    except (KeyboardInterrupt, SystemExit) as err:
        print(f"interrupted ({type(err).__name__})", file=sys.stderr)
        return 1
    finally:
        harness.stop_all()
        if args.keep:
            print(f"kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
