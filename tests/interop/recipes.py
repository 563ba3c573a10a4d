"""The cookbook's recipes (docs/scenarios.md, "Recipes with gRPC") against gRPC's real xDS
client: xDS fallback (gRFC A71) at start-up, mid start-up and for a new target after the
primary died, a resource that does not exist, ignore_resource_deletion (gRFC A53) with and
without the server feature, a NACK that keeps the last good route, and reconnect backoff.

Each recipe starts its own xdsloop-server(s) (admin on a listener of its own, so /status
answers through an outage) on a fixture copy whose clusters point at one backend, and its own
gRPC client process, and checks both what the client's calls did (which backend answered, or
the error gRPC gave) and what the server's /status shows. It checks what a gRFC or the xDS
spec promises a client in that configuration; what a client does beyond that, or where it was
seen to deviate (DEVIATIONS), is a SEEN line that passes or fails nothing. `run.py` calls
`run_all` once the main flow is done.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import fixture_edits as fx
from faults import delete_scenario, put_scenario
from harness import Proc, Setup
from xdsloop import XdsServer
from status_checks import fetch_status, wait_status

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
TARGET = f"xds:///{fx.LISTENER}"
NEW_LISTENER = "greeter-new"
NEW_TARGET = f"xds:///{NEW_LISTENER}"
FALLBACK_BOOTSTRAP = "grpc-bootstrap-fallback.json"
# Calls in a row that must agree before the run believes where the traffic goes.
RUN = 5
START_TIMEOUT_S = 20
# gRPC C-core's xDS timings (src/core/xds/grpc/xds_client.cc and xds_transport): a resource
# not received 15 s after it was asked for does not exist; the ADS stream's retries back off
# from 1 s, x1.6 per attempt, +-20% jitter, up to 120 s.
DOES_NOT_EXIST_S = 15
BACKOFF_INITIAL_S, BACKOFF_MULTIPLIER, BACKOFF_JITTER, BACKOFF_MAX_S = 1.0, 1.6, 0.2, 120.0
# How long the primary is down in the fallback recipes; a falling-forward client returns
# within its retry delay after that.
OUTAGE_S = 10
# The cookbook's files: the recipes run exactly what docs/scenarios.md shows.
SCENARIOS = REPO / "examples" / "scenarios" / "grpc"


def scenario(name: str) -> str:
    return (SCENARIOS / f"{name}.yaml").read_text()


@dataclass
class Env:
    python: Path
    # Starts an XdsServer: the pytest plugin's xds_server_factory.
    servers: Callable[..., XdsServer]
    work: Path
    ports: dict
    report: object
    procs: list = field(default_factory=list)
    # The servers of the recipe running now, stopped when it ends.
    started: list = field(default_factory=list)
    # What a run printed for the docs: recipe -> lines.
    shown: dict = field(default_factory=dict)
    # The client program and its label: gRPC C-core through client.py by default, or
    # @grpc/grpc-js-xds through client.js (js.py).
    client: list = field(default_factory=list)
    client_label: str = "grpcio"

    def check(self, name: str, ok: bool, why: str = "") -> bool:
        return self.report.check(f"recipe ({self.client_label}): {name}", ok, why)

    def observe(self, name: str, what: str) -> None:
        """Reports what the client did where the recipe promises nothing: a SEEN line."""
        self.report.observe(f"recipe ({self.client_label}): {name}", what)

    def promise(self, name: str, ok: bool, why: str, deviation: str) -> None:
        """A check of what a gRFC or the spec promises, unless this client was seen to deviate
        from that promise (`deviation` in its DEVIATIONS): then the outcome, kept or not, is a
        SEEN line, so a run where the client happens to keep it fails nothing either."""
        if deviation not in DEVIATIONS.get(self.client_label, ()):
            self.check(name, ok, why)
            return
        kept = "kept the promise this time" if ok else "did not keep it"
        self.observe(name, f"{kept} (a known deviation, docs/scenarios.md): {why}")

    def show(self, recipe: str, line: str) -> None:
        self.shown.setdefault(recipe, []).append(line)
        print(f"  [{recipe}] {line}", flush=True)


# ---- servers, bootstraps, clients -------------------------------------------------------------

def fixtures_to(env: Env, name: str, backend: str) -> Path:
    """A copy of fixtures/grpc whose clusters both go to `backend`, with a second listener
    (greeter-new, the same route) for the new-target recipe."""
    dest = env.work / f"fixtures-{name}"
    port = env.ports[backend]
    fx.copy_with_ports(REPO / "fixtures" / "grpc", dest, port, port)
    listener = (dest / "listeners.yaml").read_text()
    (dest / "listener-new.yaml").write_text(
        listener.replace(f"name: {fx.LISTENER}\n", f"name: {NEW_LISTENER}\n", 1))
    return dest


def start_server(env: Env, name: str, fixtures: Path,
                 scenario: str | None = None) -> tuple[int, str, XdsServer]:
    """An XdsServer with its admin routes on a listener of their own (so /status answers
    while its xDS port is down), its log and transcript in server-NAME/ of the run's work
    directory; returns xDS port, admin address, server."""
    server = env.servers(name=f"xdsloop-server ({name})", fixtures=fixtures,
                         admin_listener=True, scenario=scenario,
                         workdir=env.work / f"server-{name}",
                         env={"RUST_LOG": os.environ.get("INTEROP_RUST_LOG", "info")})
    env.started.append(server)
    return server.port, server.admin_address, server


def write_bootstrap(env: Env, name: str, node: str, servers: list[int],
                    example: str = "grpc-bootstrap.json") -> Path:
    """An example bootstrap of examples/ with its xds_servers pointed at `servers`, in order
    (the first is the primary, gRFC A71); an authority's xds_servers too, and the top-level
    list then at the first."""
    bootstrap = json.loads((REPO / "examples" / example).read_text())
    lists = [bootstrap["xds_servers"]]
    lists += [a["xds_servers"] for a in bootstrap.get("authorities", {}).values()]
    for listed in lists:
        if len(listed) > len(servers):
            raise Setup(f"examples/{example} lists {len(listed)} xds_servers, not {len(servers)}")
        for entry, port in zip(listed, servers):
            entry["server_uri"] = f"127.0.0.1:{port}"
    bootstrap["node"]["id"] = node
    path = env.work / f"bootstrap-{name}.json"
    path.write_text(json.dumps(bootstrap, indent=2))
    return path


def start_client(env: Env, name: str, bootstrap: Path, extra: dict | None = None,
                 target: str = TARGET) -> Proc:
    run_env = dict(os.environ, GRPC_XDS_BOOTSTRAP=str(bootstrap), **(extra or {}))
    if os.environ.get("INTEROP_GRPC_TRACE"):
        run_env["GRPC_TRACE"] = os.environ["INTEROP_GRPC_TRACE"]
        run_env["GRPC_VERBOSITY"] = "DEBUG"
    program = env.client or [str(env.python), str(HERE / "client.py")]
    proc = Proc(f"{env.client_label} client ({name})", [*program, target], env=run_env)
    env.procs.append(proc)
    return proc


class Traffic:
    """A client's calls: `SEQ OK NAME [then]` / `SEQ ERR CODE [then] DETAILS` lines."""

    CALL = re.compile(r"^(\d+) (OK|ERR) (\S+)( then)?(?: (.*))?$")

    def __init__(self, client: Proc) -> None:
        self.client = client

    def mark(self) -> int:
        return self.client.out.mark()

    @classmethod
    def calls(cls, lines: list[str], then: bool = False) -> list[str]:
        """Each call as the answering backend, or `ERR:<code>:<details>`."""
        out = []
        for line in lines:
            m = cls.CALL.match(line)
            if not m or bool(m.group(4)) != then:
                continue
            out.append(m.group(3) if m.group(2) == "OK" else f"ERR:{m.group(3)}:{m.group(5) or ''}")
        return out

    def since(self, mark: int, then: bool = False) -> list[str]:
        return self.calls(self.client.out.lines[mark:], then)

    def wait_run(self, name: str, since: int, timeout: float,
                 then: bool = False) -> tuple[bool, str]:
        """Waits for RUN calls in a row answered by `name` (or, for `ERR:...`, failing with
        that prefix) after `since`."""
        def moved(lines):
            calls = self.calls(lines[since:], then)
            return len(calls) >= RUN and all(c.startswith(name) for c in calls[-RUN:])
        ok = self.client.out.wait(moved, timeout)
        return bool(ok), self.describe(since, then)

    def wait_count(self, count: int, since: int, timeout: float, then: bool = False) -> list[str]:
        def enough(lines):
            calls = self.calls(lines[since:], then)
            return calls[:count] if len(calls) >= count else None
        return self.client.out.wait(enough, timeout) or self.since(since, then)

    def describe(self, since: int, then: bool = False) -> str:
        calls = [c.split(":", 2)[0] + (":" + c.split(":", 2)[1] if c.startswith("ERR") else "")
                 for c in self.since(since, then)]
        counts = {c: calls.count(c) for c in dict.fromkeys(calls)}
        return f"{len(calls)} calls: {counts}; last: {self.since(since, then)[-2:]}"


# ---- /status verdicts ------------------------------------------------------------------------

def streams_of(status: dict, node: str, closed: bool = False) -> list[dict]:
    key = "recently_closed" if closed else "streams"
    return [s for s in status.get(key, []) if s.get("node_id") == node]


def serves(node: str, listener: str = fx.LISTENER):
    """"" once an open stream of `node` subscribed `listener` and ACKed every type."""
    def verdict(status: dict) -> str:
        for stream in streams_of(status, node):
            types = {t.get("type"): t for t in stream.get("types", [])}
            lds = types.get("lds", {})
            if listener in (lds.get("names") or []) and all(
                    (types.get(t, {}).get("last_acked") or {}).get("version")
                    for t in ("lds", "rds", "cds", "eds")):
                return ""
        return f"open streams of {node}: {streams_of(status, node)}"
    return verdict


def no_stream(node: str):
    def verdict(status: dict) -> str:
        found = streams_of(status, node)
        return "" if not found else f"{node} has open streams: {[s.get('id') for s in found]}"
    return verdict


def outage(active: bool, rule: str, trigger: str = ""):
    def verdict(status: dict) -> str:
        o = (status.get("scenario") or {}).get("outage") or {}
        ok = o.get("active") == active and o.get("rule") == rule \
            and o.get("trigger", "").startswith(trigger)
        return "" if ok else f"scenario.outage: {o}"
    return verdict


def status_of(admin: str) -> dict:
    return fetch_status(admin) or {}


# ---- recipes ---------------------------------------------------------------------------------

# Promises a client was seen not to keep, each with its evidence in docs/scenarios.md ("What
# grpc-js-xds 1.14.1 did"): the recipes report what they see there and judge the rest.
DEVIATIONS: dict[str, set[str]] = {
    # grpc-js-xds 1.14.1: after a deletion it ACKs the cluster's return but never asks for
    # its endpoints again; its retry delays compound their jitter.
    "grpc-js": {"deleted cluster back", "documented backoff"},
}


def falls_back(env: Env) -> bool:
    """gRFC A71 fallback: grpcio (C-core) has it; @grpc/grpc-js-xds 1.14 has none (its sources
    never mention a second server)."""
    return env.client_label == "grpcio"


def without_fallback(env: Env, cell: str, calls: Traffic, since: int, admins: tuple[str, str],
                     node: str, then: bool = False, listener: str = fx.LISTENER,
                     count: int = 0) -> None:
    """A fallback cell with a client that has no fallback. A71 ("Change xDS Bootstrap to
    handle multiple xDS configuration servers") gives such a client only the bootstrap's
    order: it uses the first server, the primary. So what is checked is that once the primary
    is back (after OUTAGE_S) its /status shows the client's stream subscribed to `listener`
    with every type ACKed. Whether the client fell back anyway and how its calls went are
    reported, not judged (docs/scenarios.md has what grpc-js-xds 1.14.1 did). `count`: the
    calls to wait for, when the cell's end comes after the client is back on the primary."""
    p_admin, s_admin = admins
    if count:
        made = calls.wait_count(count, since, OUTAGE_S + 20, then)
    else:
        calls.wait_run("A", since, OUTAGE_S + 20, then)
        made = calls.since(since, then)
    served, why = wait_status(p_admin, serves(node, listener), 5)
    env.check(f"{cell}: once the primary (first in the bootstrap) is back, its /status shows "
              f"the client's stream subscribed to {listener}, every type ACKed", served, why)
    on_secondary = streams_of(status_of(s_admin), node) \
        + streams_of(status_of(s_admin), node, True)
    if "B" in made or on_secondary:
        env.observe(cell, f"it fell back: {made.count('B')} calls reached B, "
                    f"{len(on_secondary)} stream(s) on the secondary")
    else:
        env.observe(cell, "no fallback: no call reached B, no stream on the secondary")
    before_a = made[:made.index("A")] if "A" in made else made
    if before_a and all(c.startswith("ERR") for c in before_a):
        env.observe(cell, f"until a call reached A its calls failed ({len(before_a)} failed: "
                    f"{before_a[0]})")
    last = made[-RUN:]
    if last and all(c == "A" for c in last):
        env.observe(cell, "back on the primary, its last calls reach A")
    elif served and last and all("does not exist" in c for c in last):
        env.observe(cell, "back on the primary, its last calls fail: the cluster the primary "
                    f"sent and it ACKed 'does not exist' ({last[-1]})")
    else:
        env.observe(cell, f"back on the primary, its last calls: {last}")
    env.show(cell, calls.describe(since, then))


def fallback(env: Env) -> None:
    """gRFC A71: the bootstrap lists the primary (its clusters go to A) and the secondary (to B)."""
    primary_fx, secondary_fx = fixtures_to(env, "primary", "A"), fixtures_to(env, "secondary", "B")
    s_port, s_admin, _ = start_server(env, "secondary", secondary_fx)

    # Cell 1: start-up with the primary down. Its scenario, installed at its start, is an
    # outage: its port refuses connections for OUTAGE_S.
    p_port, p_admin, _ = start_server(env, "primary-startup", primary_fx,
                                      scenario("primary-down"))
    ok, why = wait_status(p_admin, outage(True, "primary-down", "installed"), 5)
    env.check("fallback at start-up: the primary's /status shows its outage active", ok, why)
    node = "recipe-fallback-startup"
    client = start_client(env, "fallback start-up",
                          write_bootstrap(env, "fallback", node, [p_port, s_port],
                                          FALLBACK_BOOTSTRAP))
    calls = Traffic(client)
    if falls_back(env):
        fallback_and_forward(env, calls, p_admin, s_admin, node)
    else:
        without_fallback(env, "fallback at start-up", calls, 0, (p_admin, s_admin), node)
    client.stop()
    fallback_requested(env, primary_fx, s_port, s_admin)
    fallback_after(env, primary_fx, s_port, s_admin)


def fallback_and_forward(env: Env, calls: Traffic, p_admin: str, s_admin: str,
                         node: str) -> None:
    """The start-up cell with a client that falls back: to B, then forward to A."""
    ok, why = calls.wait_run("B", 0, OUTAGE_S)
    env.check("fallback at start-up: the primary refuses connections, gRPC falls back and calls "
              "reach the secondary's backend B", ok, why)
    ok, why = wait_status(s_admin, serves(node), 5)
    env.check("fallback at start-up: the secondary's /status shows the client's stream, every "
              "type ACKed", ok, why)
    since = calls.mark()
    ok, why = calls.wait_run("A", since, OUTAGE_S + 15)
    env.check("fallback at start-up: the primary is back; gRPC falls forward and calls move to A",
              ok, why)
    ok, why = wait_status(p_admin, serves(node), 5)
    ok2, why2 = wait_status(s_admin, no_stream(node), 10)
    env.check("fallback at start-up: the primary's /status now shows the client's stream, the "
              "secondary's none (gRPC closed it)", ok and ok2, why or why2)
    env.show("fallback-startup", calls.describe(0))


def fallback_requested(env: Env, primary_fx: Path, s_port: int, s_admin: str) -> None:
    """Mid start-up, the moment gRPC's interop control plane uses: the primary serves LDS and
    RDS and goes down when the client first asks for the cluster."""
    p_port, p_admin, _ = start_server(env, "primary-requested", primary_fx,
                                      scenario("primary-down-on-cds"))
    node = "recipe-fallback-requested"
    client = start_client(env, "fallback mid start-up",
                          write_bootstrap(env, "fallback-requested", node, [p_port, s_port],
                                          FALLBACK_BOOTSTRAP))
    calls = Traffic(client)
    ok, why = wait_status(p_admin, outage(True, "down-on-cds",
                                          f"requested: cds {fx.CLUSTER_A} by node {node}"),
                          START_TIMEOUT_S)
    env.check("fallback mid start-up: the primary's /status names the request that set the "
              "outage off", ok, why)
    shown = (status_of(p_admin).get("scenario") or {}).get("outage")
    env.show("fallback-requested", f"primary /status scenario.outage: {json.dumps(shown)}")
    if not falls_back(env):
        # 400 calls, 20 s: the client is back on the primary past the 15 s after its first
        # CDS request at which grpc-js-xds was seen to drop the cluster.
        without_fallback(env, "fallback mid start-up", calls, 0, (p_admin, s_admin), node,
                         count=400)
        client.stop()
        return
    ok, why = calls.wait_run("B", 0, OUTAGE_S + 5)
    env.check("fallback mid start-up: the primary goes down at the client's CDS request "
              f"for {fx.CLUSTER_A}; gRPC falls back and calls reach B", ok, why)
    ok, why = wait_status(s_admin, serves(node), 5)
    env.check("fallback mid start-up: the secondary's /status shows the client's stream", ok, why)
    since = calls.mark()
    ok, why = calls.wait_run("A", since, OUTAGE_S + 15)
    env.check("fallback mid start-up: the primary is back; calls move to A", ok, why)
    env.show("fallback-requested", calls.describe(0))
    client.stop()


def fallback_after(env: Env, primary_fx: Path, s_port: int, s_admin: str) -> None:
    """After start-up: the client got everything from the primary, then the primary dies;
    then a new target in the same process."""
    p_port, p_admin, _ = start_server(env, "primary-after", primary_fx)
    node = "recipe-fallback-after"
    go = env.work / "fallback-new-target"
    client = start_client(env, "fallback after start-up",
                          write_bootstrap(env, "fallback-after", node, [p_port, s_port],
                                          FALLBACK_BOOTSTRAP),
                          {"INTEROP_THEN_TARGET": NEW_TARGET, "INTEROP_THEN_WHEN": str(go)})
    calls = Traffic(client)
    ok, why = calls.wait_run("A", 0, START_TIMEOUT_S)
    env.check("fallback after start-up: calls reach A through the primary", ok, why)
    put_scenario(p_admin, scenario("primary-down"))
    ok, why = wait_status(p_admin, outage(True, "primary-down"), 5)
    since = calls.mark()
    steady = calls.wait_count(40, since, 10)
    ok = ok and len(steady) >= 40 and all(c == "A" for c in steady)
    env.check("fallback after start-up: the primary is down, gRPC keeps its cached resources "
              "and calls keep reaching A", ok, why or calls.describe(since))
    ok, why = wait_status(s_admin, no_stream(node), 1)
    env.check("fallback after start-up: no fallback while nothing is uncached (A71): the "
              "secondary's /status shows no stream of the client", ok, why)
    # A new target in the same process: its listener is not cached, so the client falls back.
    since = calls.mark()
    go.write_text("go\n")
    if not falls_back(env):
        without_fallback(env, f"fallback for a new target ({NEW_TARGET})", calls, since,
                         (p_admin, s_admin), node, then=True, listener=NEW_LISTENER)
        client.stop()
        return
    ok, why = calls.wait_run("B", since, OUTAGE_S, then=True)
    env.check(f"fallback for a new target ({NEW_TARGET}) while the primary is down: gRPC falls "
              "back and its calls reach B", ok, why)
    ok, why = wait_status(s_admin, serves(node, NEW_LISTENER), 5)
    env.check("fallback for a new target: the secondary's /status shows the client's stream "
              f"subscribed to {NEW_LISTENER}", ok, why)
    env.show("fallback-after", "old target: " + calls.describe(since))
    env.show("fallback-after", "new target: " + calls.describe(since, then=True))
    client.stop()


# gRFC A95: the bootstrap authority whose servers fall back on reachability alone, and the
# target that uses it (fixtures/grpc/federation.yaml serves its xdstp:// listener).
A95_BOOTSTRAP = "grpc-bootstrap-fallback-a95.json"
A95_TARGET = "xds://xdsloop.test/greeter"


def fallback_a95(env: Env) -> None:
    """gRFC A95: after a primary that served everything dies, a client falls back anyway when
    its authority says `fallback_on_reachability_only` and GRPC_EXPERIMENTAL_XDS_ENDPOINT_FALLBACK
    is true. Two clients of the same bootstrap, one without the variable."""
    s_port, _, _ = start_server(env, "a95-secondary", fixtures_to(env, "a95-secondary", "B"))
    p_port, p_admin, _ = start_server(env, "a95-primary", fixtures_to(env, "a95-primary", "A"))
    clients = {}
    for label, flag in (("with", "true"), ("without", "false")):
        node = f"recipe-a95-{label}"
        bootstrap = write_bootstrap(env, f"a95-{label}", node, [p_port, s_port], A95_BOOTSTRAP)
        client = start_client(env, f"A95 {label} the variable", bootstrap,
                              {"GRPC_EXPERIMENTAL_XDS_ENDPOINT_FALLBACK": flag}, A95_TARGET)
        clients[label] = Traffic(client)
    for label, calls in clients.items():
        ok, why = calls.wait_run("A", 0, START_TIMEOUT_S)
        env.check(f"A95 ({label} the variable): {A95_TARGET} resolves through the primary's "
                  "xdstp:// names and calls reach A", ok, why)
    marks = {label: calls.mark() for label, calls in clients.items()}
    put_scenario(p_admin, scenario("primary-down"))
    if falls_back(env):
        # A95 ("Bootstrap Knob to Control Fallback Criteria"): with the knob on, a client
        # falls back when the primary is unreachable even with everything cached.
        ok, why = clients["with"].wait_run("B", marks["with"], OUTAGE_S - 2)
        env.check("A95: the primary dies after serving everything; with "
                  "GRPC_EXPERIMENTAL_XDS_ENDPOINT_FALLBACK=true and fallback_on_reachability_only "
                  "gRPC falls back and calls move to B", ok, why)
    else:
        # A client without A95 (or A71) is promised nothing about fallback: reported.
        steady = clients["with"].wait_count(100, marks["with"], 15)
        env.observe("A95 (with the variable)", "no fallback: calls stayed on A (100 calls)"
                    if len(steady) >= 100 and all(c == "A" for c in steady)
                    else clients["with"].describe(marks["with"]))
    # Without the variable A95 is off (its "Temporary environment variable protection"), so
    # A71 holds: no fallback while nothing watched is uncached; and A88's table ("xDS channel
    # reports TRANSIENT_FAILURE", resource cached: Ignore, old and new behaviour alike) has a
    # client keep using what it cached while its server is unreachable. Every client is held
    # to that.
    calls = clients["without"]
    steady = calls.wait_count(100, marks["without"], 15)
    env.check("A95: without the variable the client does not fall back: it keeps its cached "
              "resources and calls stay on A (100 calls, 5 s)",
              len(steady) >= 100 and all(c == "A" for c in steady),
              calls.describe(marks["without"]))
    for label, calls in clients.items():
        env.show("fallback-a95", f"{label} the variable, after the outage began: "
                                 f"{calls.describe(marks[label])}")


def does_not_exist(env: Env) -> None:
    """The cluster is withheld: gRPC's CDS watcher waits its 15 s, then the resource does not
    exist and calls fail UNAVAILABLE with gRPC's reason."""
    port, admin, _ = start_server(env, "not-found", fixtures_to(env, "not-found", "A"),
                                  scenario("hide-cluster"))
    node = "recipe-not-found"
    started = time.monotonic()
    client = start_client(env, "does not exist",
                          write_bootstrap(env, "not-found", node, [port]),
                          {"INTEROP_WAIT_FOR_READY": "0"})
    calls = Traffic(client)
    ok, why = calls.wait_run("ERR:UNAVAILABLE", 0, DOES_NOT_EXIST_S + 15)
    waited = time.monotonic() - started
    failed = [c for c in calls.since(0) if c.startswith("ERR:UNAVAILABLE")]
    early = [c for c in calls.since(0) if not c.startswith("ERR")]
    env.check(f"does not exist: no call reaches a backend; after gRPC's {DOES_NOT_EXIST_S} s "
              "timer they fail UNAVAILABLE saying the cluster does not exist",
              ok and not early and bool(failed) and "does not exist" in failed[-1]
              and waited >= DOES_NOT_EXIST_S - 1,
              f"{why}; {waited:.1f} s after the client started; last: {failed[-1:]}")

    def withheld(status: dict) -> str:
        for stream in streams_of(status, node):
            cds = next((t for t in stream.get("types", []) if t.get("type") == "cds"), {})
            w = cds.get("withheld") or {}
            if w.get("names") == [fx.CLUSTER_A] and w.get("rule") == "hide-cluster" \
                    and w.get("waited_ms", 0) >= DOES_NOT_EXIST_S * 1000:
                return ""
            return f"cds: {cds}"
        return f"no stream of {node}"
    ok, why = wait_status(admin, withheld, 5)
    for stream in streams_of(status_of(admin), node):
        cds = next((t for t in stream.get("types", []) if t.get("type") == "cds"), {})
        env.show("not-found", f"/status cds: state {cds.get('state')}, withheld "
                              f"{json.dumps(cds.get('withheld'))}")
    env.check(f"does not exist: /status names {fx.CLUSTER_A} withheld by the rule and how long "
              "the client has waited for it (over the 15 s)", ok, why)
    env.show("not-found", f"first failure {waited:.1f} s after start: {failed[:1]}")
    env.show("not-found", calls.describe(0))
    client.stop()


def ignore_deletion(env: Env) -> None:
    """gRFC A53: `flap` takes the cluster out of CDS for 2 s, twice; one client's bootstrap
    server has `ignore_resource_deletion`, the other's not."""
    port, admin, _ = start_server(env, "ignore-deletion", fixtures_to(env, "ird", "A"),
                                  scenario("blink-cluster"))
    results = {}
    for label, example in (("with", "grpc-bootstrap-ignore-deletion.json"),
                           ("without", "grpc-bootstrap.json")):
        node = f"recipe-deletion-{label}"
        client = start_client(env, f"deletion {label} the feature",
                              write_bootstrap(env, f"deletion-{label}", node, [port], example),
                              {"INTEROP_WAIT_FOR_READY": "0"})
        results[label] = (node, Traffic(client), client)
    # Two removals of 2 s each after 2 s: 10 s covers them; 20 calls a second.
    for label, (node, calls, client) in results.items():
        made = calls.wait_count(180, 0, 25)
        # Calls before the client first resolved the target say nothing about deletions.
        first = next((i for i, c in enumerate(made) if c == "A"), 0)
        results[label] = (node, made[first:], client)
    with_calls, without_calls = results["with"][1], results["without"][1]
    # A53: with `ignore_resource_deletion` on its server, the client ignores the deletion of
    # a resource it uses (grpc-js-xds reads the feature too, though its README lists no A53).
    env.check("ignore_resource_deletion: with the server feature, every call reaches A "
              "through both removals", bool(with_calls) and all(c == "A" for c in with_calls),
              f"{len(with_calls)} calls, not A: {[c for c in with_calls if c != 'A'][:3]}")
    failed = [c for c in without_calls if c.startswith("ERR")]
    texts = sorted(set(failed))[:2]
    # A53's abstract: without the feature "a CDS resource deletion will cause the channel to
    # fail RPCs bound for that cluster" (the error's text is the client's own).
    env.check("ignore_resource_deletion: without it, calls fail while the cluster is deleted",
              bool(failed), f"{len(without_calls)} calls, {len(failed)} failed: {texts}")
    # xds_protocol: a SotW CDS response carries every cluster, so the one after a removal
    # brings it back, and the client ACKs each one. Seen by the server.
    ok, why = wait_status(admin, cluster_back_acked(results["without"][0]), 5)
    env.check("ignore_resource_deletion: without it, /status shows the rule's removals on the "
              "client's CDS, then its ACK of the served CDS with the cluster again", ok, why)
    # A27: the cluster the route names is watched, with its endpoints, while the route names
    # it; once it is back calls reach it again.
    last = without_calls[-RUN:]
    env.promise("ignore_resource_deletion: without it, calls recover once the cluster is back",
                len(last) == RUN and all(c == "A" for c in last),
                f"{len(without_calls)} calls, {len(failed)} failed: {texts}; last: {last[-2:]}",
                "deleted cluster back")

    def flapped(status: dict) -> str:
        rules = (status.get("scenario") or {}).get("rules", [])
        fired = rules[0].get("fired", 0) if rules else 0
        return "" if fired >= 4 else f"blink fired {fired} times (2 removals per client)"
    ok, why = wait_status(admin, flapped, 5)
    env.check("ignore_resource_deletion: /status counts the removals on both clients' streams",
              ok, why)
    for label, (_, made, client) in results.items():
        counts = {c.split(" ")[0][:60]: made.count(c) for c in dict.fromkeys(made)}
        env.show("ignore-deletion", f"{label} the feature: {len(made)} calls: {counts}")
        client.stop()


def cluster_back_acked(node: str):
    """"" once `node`'s CDS, after a blink removal on its stream, is ACKed at a version that
    is not a flapped one (the response with the cluster again)."""
    def verdict(status: dict) -> str:
        for stream in streams_of(status, node):
            cds = next((t for t in stream.get("types", []) if t.get("type") == "cds"), {})
            version = (cds.get("last_acked") or {}).get("version", "")
            if (cds.get("last_fault") or {}).get("rule") == "blink" and version \
                    and "-flap-" not in version:
                return ""
            return f"cds: {cds}"
        return f"no stream of {node}"
    return verdict


def nack_keeps_last_good(env: Env) -> None:
    """The route's next push is corrupt: gRPC NACKs it with its own error text and keeps
    calling through the route it had."""
    fixtures = fixtures_to(env, "nack", "A")
    # greeter-b goes to B: the corrupt route would move calls there if it were applied.
    fx.write_in_place(fixtures / fx.ENDPOINTS_FILE,
                      fx.endpoints(env.ports["A"], env.ports["B"], "greeter-a A, greeter-b B"))
    port, admin, _ = start_server(env, "nack", fixtures)
    node = "recipe-nack"
    client = start_client(env, "nack", write_bootstrap(env, "nack", node, [port]))
    calls = Traffic(client)
    ok, why = calls.wait_run("A", 0, START_TIMEOUT_S)
    env.check("NACK keeps the last good config: calls reach A", ok, why)
    put_scenario(admin, scenario("bad-route"))
    since = calls.mark()
    fx.write_in_place(fixtures / fx.ROUTES_FILE, fx.routes(fx.CLUSTER_B))

    def nacked(status: dict) -> str:
        for stream in streams_of(status, node):
            rds = next((t for t in stream.get("types", []) if t.get("type") == "rds"), {})
            nack = rds.get("last_nack") or {}
            if rds.get("state") == "NACKED" and (rds.get("last_fault") or {}).get("rule") \
                    == "bad-route" and nack.get("message"):
                return ""
            return f"rds: {rds}"
        return f"no stream of {node}"
    ok, why = wait_status(admin, nacked, 10)
    env.check("NACK keeps the last good config: /status shows RDS NACKED by the client, with "
              "its error text, after the rule's corrupt push", ok, why)
    steady = calls.wait_count(40, since, 10)
    env.check("NACK keeps the last good config: calls keep reaching A (the route gRPC had)",
              len(steady) >= 40 and all(c == "A" for c in steady), calls.describe(since))
    for stream in streams_of(status_of(admin), node):
        rds = next((t for t in stream.get("types", []) if t.get("type") == "rds"), {})
        env.show("nack", f"rds state {rds.get('state')}, last_nack: "
                         f"{json.dumps(rds.get('last_nack'))}")
    delete_scenario(admin)
    client.stop()


def backoff_windows(attempts: int) -> list[tuple[float, float]]:
    """gRPC's documented ADS retry delays: attempt n waits min(1 s x 1.6^(n-1), 120 s), +-20%."""
    out = []
    for n in range(attempts):
        base = min(BACKOFF_INITIAL_S * BACKOFF_MULTIPLIER ** n, BACKOFF_MAX_S)
        out.append((base * (1 - BACKOFF_JITTER), base * (1 + BACKOFF_JITTER)))
    return out


def reconnect_intervals(status: dict, node: str, from_start: bool = False) -> list[float]:
    """Seconds between one stream of `node` closing (`from_start`: opening) and its next
    opening, as the server saw them (/status: connected_since, disconnected_at)."""
    streams = streams_of(status, node, closed=True) + streams_of(status, node)
    streams.sort(key=lambda s: s["id"])

    def t(text: str) -> float:
        from datetime import datetime
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    start = "connected_since" if from_start else "disconnected_at"
    return [round(t(b["connected_since"]) - t(a[start]), 3)
            for a, b in zip(streams, streams[1:]) if a.get("disconnected_at")]


# What the server sees is the client's delay plus its reconnect: a new stream on the same
# connection, a few milliseconds.
SETUP_S = 0.05


def within(intervals: list[float], windows: list[tuple[float, float]]) -> list[str]:
    """What of `intervals` falls outside gRPC's windows (empty: all comply)."""
    return [f"retry {n + 1}: {got:.2f} s, not in {lo:.2f}-{hi:.2f} s"
            for n, (got, (lo, hi)) in enumerate(zip(intervals, windows))
            if not lo <= got <= hi + SETUP_S]


# refuse-streams.yaml's `times`.
CLOSES = 4


def backoff(env: Env) -> None:
    """Every stream is closed instead of its first LDS response, CLOSES times: the client never
    gets a response, so gRFC A57 has it back off exponentially between attempts, "similar to"
    gRPC's connection backoff (doc/connection-backoff.md: 1 s, x1.6, +-20%, 120 s cap)."""
    port, admin, _ = start_server(env, "backoff", fixtures_to(env, "backoff", "A"),
                                  scenario("refuse-streams"))
    node = "recipe-backoff"
    client = start_client(env, "backoff", write_bootstrap(env, "backoff", node, [port]))
    calls = Traffic(client)
    windows = backoff_windows(CLOSES)
    ok, why = calls.wait_run("A", 0, sum(hi for _, hi in windows) + START_TIMEOUT_S)
    env.check(f"backoff: after {CLOSES} closed streams the next one is served and calls reach A",
              ok, why)
    status = status_of(admin)
    # C-core starts its retry timer when a stream ends; grpc-js-xds when a stream starts (its
    # first stream before its connection, which the server cannot see).
    from_start = env.client_label == "grpc-js"
    intervals = reconnect_intervals(status, node, from_start)
    # A57 ("exponential backoff for each successive attempt"): each retry waits longer than the
    # one before; the connection backoff's windows for successive attempts never overlap.
    env.check("backoff: each retry the server saw waits longer than the one before (A57: "
              "exponential backoff)", len(intervals) == CLOSES
              and all(b > a for a, b in zip(intervals, intervals[1:])), f"intervals {intervals}")
    off = within(intervals, windows)
    env.promise("backoff: the reconnect intervals the server saw are in the windows of gRPC's "
                "documented connection backoff (1 s, x1.6, +-20%)",
                len(intervals) == CLOSES and not off,
                f"intervals {intervals} ({'from stream start' if from_start else 'from stream end'}"
                f"); {off or 'all within'}", "documented backoff")
    if "documented backoff" in DEVIATIONS.get(env.client_label, ()):
        # grpc-js-xds was seen to multiply its jittered delay: each retry 1.6 times the one
        # before, +-20%, so its jitter compounds and drifts from the windows.
        chained = [(prev * BACKOFF_MULTIPLIER * (1 - BACKOFF_JITTER),
                    prev * BACKOFF_MULTIPLIER * (1 + BACKOFF_JITTER))
                   for prev in [BACKOFF_INITIAL_S, *intervals[1:-1]]]
        drift = within(intervals[1:], chained)
        env.observe("backoff", "each retry after the first is 1.6 times the one before, +-20% "
                    "(its jitter compounds)" if len(intervals) == CLOSES and not drift
                    else f"not 1.6 times the one before: {drift}")
    env.check("backoff: that comparison fails on a client that retries at once, and on one "
              "that retries every second without growing",
              bool(within([0.05] * CLOSES, windows)) and bool(within([1.0] * CLOSES, windows)))
    c10 = [s.get("id") for s in streams_of(status, node, True) + streams_of(status, node)
           if "C10" in json.dumps(s.get("violations"))]
    rules = (status.get("scenario") or {}).get("rules", [])
    env.check("backoff: /status shows the rule fired on each stream and the judge's C10 (no "
              "reconnect loop) found nothing", bool(rules) and rules[0].get("fired") == CLOSES
              and not c10 and status.get("counters", {}).get("violations", 0) == 0,
              f"rules {rules}; C10 {c10}; counters {status.get('counters')}")
    for n, (got, (lo, hi)) in enumerate(zip(intervals, windows)):
        env.show("backoff", f"retry {n + 1}: {got:.3f} s (gRPC: {lo:.2f}-{hi:.2f} s)")
    client.stop()


RECIPES: dict[str, Callable[[Env], None]] = {
    "fallback": fallback,
    "fallback-a95": fallback_a95,
    "not-found": does_not_exist,
    "ignore-deletion": ignore_deletion,
    "nack": nack_keeps_last_good,
    "backoff": backoff,
}


def run_all(env: Env, only: list[str] | None = None) -> None:
    for name, recipe in RECIPES.items():
        if only and name not in only:
            continue
        started = time.monotonic()
        try:
            recipe(env)
        finally:
            for server in env.started:
                server.stop()
            env.started.clear()
            for proc in env.procs:
                proc.stop()
                # Every process's output, kept with the run (--keep) for the cookbook.
                slug = re.sub(r"[^a-z0-9]+", "-", proc.name.lower()).strip("-")
                (env.work / f"{slug}.out").write_text("\n".join(proc.out.lines + proc.err.lines))
            env.procs.clear()
        print(f"recipe {name}: {time.monotonic() - started:.0f} s", flush=True)
