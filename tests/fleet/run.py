#!/usr/bin/env python3
"""A sharded fleet end to end: `xdsloop-client fleet --shard I/N` as separate processes against
one `xdsloop-server`, their reports merged by `xdsloop-client fleet merge`.

`make fleet` (in `make test`): 4 shards of 50 nodes. Checks that the shards split the nodes
evenly under the ids of an unsharded run (read from the server's /status), that every count
of the merge is the shards' sum and every percentile is exactly the one computed here from all
the shards' raw samples, that a report captured in a log (`--report -`) merges, that a
missing shard, a duplicate and a report of another run are refused with a clear message, and
that a damaged shard report is refused naming its file and the field, and nothing is written.

`make fleet-shards` (`--full`): after a warm-up run, one 10,000-node process, 4 shards of 2,500
nodes, and the one process again,
against one release server (one endpoint edit in each run): the same checks, plus the same
converged node count as the single runs and every merged percentile within their noise. Prints
a table (and the fleets' CPU per node, from the processes' rusage).

Standard library only. Every process it starts is stopped by its pid; every wait is bounded.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CLUSTER = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
ENDPOINT = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
# Lead time before --start-at: every shard process must be up and waiting by then.
LEAD_S = 3.0


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


# --- fixtures -------------------------------------------------------------------------------

def write_atomically(path: Path, text: str) -> None:
    temp = path.with_name(f".{path.name}.tmp")  # hidden: the server never loads it
    temp.write_text(text)
    temp.rename(path)


def write_fixtures(directory: Path, clusters: int, endpoints: int, first_port: int) -> None:
    cluster_list = [
        {"@type": CLUSTER, "name": f"cluster-{i:05}", "type": "EDS", "connect_timeout": "1s",
         "lb_policy": "ROUND_ROBIN",
         "eds_cluster_config": {"eds_config": {"ads": {}, "resource_api_version": "V3"}}}
        for i in range(clusters)
    ]
    endpoint_list = []
    for i in range(clusters):
        lb = [{"endpoint": {"address": {"socket_address": {
            "address": f"10.{(i >> 8) & 255}.{i & 255}.{e % 250 + 1}",
            "port_value": first_port if (i == 0 and e == 0) else 8080}}}}
            for e in range(endpoints)]
        endpoint_list.append({"@type": ENDPOINT, "cluster_name": f"cluster-{i:05}",
                              "endpoints": [{"locality": {"zone": "zone-a"}, "lb_endpoints": lb}]})
    write_atomically(directory / "clusters.json", json.dumps(cluster_list))
    write_atomically(directory / "endpoints.json", json.dumps(endpoint_list))


# --- processes ------------------------------------------------------------------------------

class Server:
    def __init__(self, bin_dir: Path, fixtures: Path) -> None:
        self.proc = subprocess.Popen(
            [str(bin_dir / "xdsloop-server"), "--fixtures", str(fixtures),
             "--listen", "127.0.0.1:0"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        first = self.proc.stdout.readline() if self.proc.stdout else ""
        if "listening on" not in first:
            self.stop()
            sys.exit(f"xdsloop-server did not start: {first!r}")
        self.addr = first.split()[-1]

    def status(self) -> dict:
        with urllib.request.urlopen(f"http://{self.addr}/status", timeout=30) as response:
            return json.load(response)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class Fleet:
    """One `xdsloop-client fleet` process; its CPU time is read from its rusage at exit."""

    def __init__(self, command: list[str], log: Path, stdout: Path | None = None) -> None:
        self.command = command
        self.log = log
        err = open(log, "w")
        out = open(stdout, "w") if stdout else err
        self.proc = subprocess.Popen(command, stdout=out, stderr=err)
        self.cpu_s = 0.0

    def wait(self, timeout_s: float) -> int:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            pid, status, usage = os.wait4(self.proc.pid, os.WNOHANG)
            if pid:
                self.cpu_s = usage.ru_utime + usage.ru_stime
                self.proc.returncode = os.waitstatus_to_exitcode(status)
                return self.proc.returncode
            time.sleep(0.05)
        self.proc.kill()
        self.proc.wait()
        raise SystemExit(f"{' '.join(self.command)} did not finish in {timeout_s:.0f} s")


def fleet_command(bin_dir: Path, server: str, nodes: int, extra: list[str]) -> list[str]:
    return [str(bin_dir / "xdsloop-client"), "fleet", "--server", server,
            "--nodes", str(nodes), *extra]


def merge(bin_dir: Path, paths: list[Path], extra: list[str] = ()) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(bin_dir / "xdsloop-client"), "fleet", "merge", *extra, *map(str, paths)],
        capture_output=True, text=True, timeout=120)


class Run:
    """One run of `nodes` nodes in `shards` processes, all opening their streams at one moment,
    with one endpoint edit `edit_after_s` later."""

    def __init__(self, name: str, shards: int, nodes: int, duration_s: float,
                 edit_after_s: float) -> None:
        self.name, self.shards, self.nodes = name, shards, nodes
        self.duration_s, self.edit_after_s = duration_s, edit_after_s
        self.reports: list[Path] = []
        self.fleets: list[Fleet] = []
        self.stream_nodes: list[str] = []

    def go(self, bin_dir: Path, server: Server, work: Path, fixtures: Path, edit_port: int,
           clusters: int, endpoints: int, log_shard: int | None = None,
           watch_streams: bool = False) -> None:
        start_at = time.time() + LEAD_S
        for index in range(self.shards):
            shard = ["--shard", f"{index}/{self.shards}"] if self.shards > 1 else []
            report = work / f"{self.name}-{index}.json"
            captured = index == log_shard
            if captured:
                # A report on stdout among progress lines, as `kubectl logs` shows a shard.
                report = work / f"{self.name}-{index}.log"
                extra = ["--report", "-", "--progress", "0.5"]
            else:
                extra = ["--report", str(report), "--progress", "0"]
            command = fleet_command(bin_dir, server.addr, self.nodes, [
                *shard, "--start-at", f"{start_at:.3f}", "--duration", str(self.duration_s),
                *extra])
            log = report if captured else work / f"{self.name}-{index}.err"
            self.fleets.append(Fleet(command, log))
            self.reports.append(report)
        if watch_streams:
            self.stream_nodes = watch_node_ids(server, self.nodes, start_at + self.edit_after_s)
        time.sleep(max(0.0, start_at + self.edit_after_s - time.time()))
        write_fixtures(fixtures, clusters, endpoints, edit_port)
        for fleet in self.fleets:
            code = fleet.wait(LEAD_S + self.duration_s + 120)
            if code != 0:
                raise SystemExit(f"{' '.join(fleet.command)} exited {code}: "
                                 f"{fleet.log.read_text()[-2000:]}")

    def cpu_s(self) -> float:
        return sum(f.cpu_s for f in self.fleets)


def watch_node_ids(server: Server, nodes: int, until: float) -> list[str]:
    """The node ids of the server's open streams, once all `nodes` are there (or at `until`)."""
    ids: list[str] = []
    while time.time() < until:
        ids = [s.get("node_id") for s in server.status().get("streams", [])]
        if len([i for i in ids if i]) >= nodes:
            break
        time.sleep(0.2)
    return ids


# --- the arithmetic, written independently of the Rust side ----------------------------------

def nearest_rank(samples: list[int]) -> dict:
    if not samples:
        return {"count": 0, "p50_ms": 0.0, "p99_ms": 0.0, "max_ms": 0.0}
    ordered = sorted(samples)

    def rank(p: float) -> float:
        k = min(max(math.ceil(p * len(ordered)), 1), len(ordered))
        return ordered[k - 1] / 1000.0

    return {"count": len(ordered), "p50_ms": rank(0.5), "p99_ms": rank(0.99), "max_ms": rank(1.0)}


def expected_from_raw(reports: list[dict]) -> dict:
    """The run's percentiles and counts, from every shard's raw samples."""
    first_config = [us for r in reports for us in r["first_config_us"] if us is not None]
    versions: dict[tuple[str, str], dict] = {}
    for r in reports:
        for v in r["versions"]:
            key = (v["type_url"], v["version"])
            slot = versions.setdefault(key, {"first": [], "change_abs": [], "seen_abs": []})
            slot["first"] += v["first"]["us"]
            slot["change_abs"] += [r["started_unix_us"] + us for us in v["change"]["us"]]
            slot["seen_abs"].append(r["started_unix_us"] + v["first_seen_us"])
    rows = {}
    for key, slot in versions.items():
        seen = min(slot["seen_abs"])
        rows[key] = {
            "first_config": nearest_rank(slot["first"]),
            "converge": nearest_rank([max(0, at - seen) for at in slot["change_abs"]]),
        }
    totals = {k: sum(r["totals"][k] for r in reports)
              for k in ("nacks", "reconnects", "responses", "bytes", "connections")}
    return {"first_config": nearest_rank(first_config), "configured": len(first_config),
            "versions": rows, "totals": totals}


def read_report(path: Path) -> dict:
    lines = [l for l in path.read_text().splitlines() if l.startswith('{"format":')]
    return json.loads(lines[0])


def check_merge_is_exact(checks: Checks, name: str, reports: list[dict], summary: dict) -> None:
    expected = expected_from_raw(reports)
    checks.check(f"{name}: first-config percentiles equal those of all raw samples",
                 summary["first_config"] == expected["first_config"],
                 f"{summary['first_config']} vs {expected['first_config']}")
    checks.check(f"{name}: configured nodes are the shards' sum",
                 summary["configured"] == expected["configured"])
    t = expected["totals"]
    sums = (summary["nacks"], summary["reconnects"], summary["responses"],
            summary["bytes_received"], summary["connections"])
    checks.check(f"{name}: counts are the shards' sums",
                 sums == (t["nacks"], t["reconnects"], t["responses"], t["bytes"], t["connections"]),
                 f"{sums} vs {t}")
    mismatched = []
    for row in summary["versions"]:
        want = expected["versions"].get((row["type_url"], row["version"]))
        got = {"first_config": row["first_config"], "converge": row["converge"]}
        if want != got:
            mismatched.append(f"{row['type']} {row['version']}: {got} vs {want}")
    checks.check(f"{name}: every version's first-config and converge percentiles equal those "
                 "of all raw samples (converge from the first sighting on any shard)",
                 not mismatched and len(summary["versions"]) == len(expected["versions"]),
                 "; ".join(mismatched))


def check_split(checks: Checks, reports: list[dict], nodes: int) -> None:
    sizes = [len(r["first_config_us"]) for r in reports]
    ranges = sorted((r["first_node"], r["first_node"] + len(r["first_config_us"])) for r in reports)
    contiguous = all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
    checks.check(f"the shards split {nodes} nodes evenly and cover each once ({sizes})",
                 max(sizes) - min(sizes) <= 1 and ranges[0][0] == 0
                 and ranges[-1][1] == nodes and contiguous, f"{ranges}")


# --- the two modes --------------------------------------------------------------------------

def small(bin_dir: Path, work: Path, checks: Checks) -> None:
    shards, per_shard, clusters, endpoints = 4, 50, 20, 4
    nodes = shards * per_shard
    fixtures = work / "fixtures"
    fixtures.mkdir()
    write_fixtures(fixtures, clusters, endpoints, 9000)
    server = Server(bin_dir, fixtures)
    try:
        run = Run("shard", shards, nodes, duration_s=6.0, edit_after_s=2.5)
        run.go(bin_dir, server, work, fixtures, 9001, clusters, endpoints, log_shard=3,
               watch_streams=True)
        ids = sorted(i for i in run.stream_nodes if i)
        checks.check(f"the server saw node ids fleet-0 .. fleet-{nodes - 1}, each once",
                     ids == sorted(f"fleet-{i}" for i in range(nodes)),
                     f"{len(ids)} ids, e.g. {ids[:3]}")
        other = work / "other-run.json"
        odd = Fleet(fleet_command(bin_dir, server.addr, nodes, [
            "--shard", "3/4", "--types", "cds", "--duration", "0.5", "--progress", "0",
            "--report", str(other)]), work / "other-run.err")
        if odd.wait(60) != 0:
            raise SystemExit(f"the other run failed: {odd.log.read_text()}")
    finally:
        server.stop()

    reports = [read_report(p) for p in run.reports]
    check_split(checks, reports, nodes)
    merged = merge(bin_dir, run.reports, ["--output", "json", "--report", str(work / "run.json")])
    if not checks.check("fleet merge accepts the four shards (one of them a captured log)",
                        merged.returncode == 0, merged.stderr):
        return
    summary = json.loads(merged.stdout)
    checks.check(f"all {nodes} nodes configured in the merged report",
                 summary["nodes"] == nodes and summary["configured"] == nodes,
                 f"{summary['configured']}/{summary['nodes']}")
    eds = [v for v in summary["versions"] if v["type"] == "eds"]
    checks.check("every node converged to the edited endpoints",
                 len(eds) == 2 and eds[-1]["converge"]["count"] == nodes, f"{eds}")
    check_merge_is_exact(checks, "merge", reports, summary)
    whole = json.loads((work / "run.json").read_text())
    checks.check("the merged report (--report) holds every node's sample in node order",
                 len(whole["first_config_us"]) == nodes
                 and whole["first_config_us"] == [us for r in reports for us in r["first_config_us"]])
    text = merge(bin_dir, run.reports)
    checks.check("the text summary names the merged run",
                 "merged 4 shard reports of one run: 200 nodes" in text.stdout, text.stdout)
    alone = merge(bin_dir, [str(work / "run.json")])
    checks.check("the merged report passes the checks of every report fleet merge reads",
                 alone.returncode == 0, alone.stderr)
    checks.check("one report is one report, not \"1 shard reports\"",
                 "merged 1 shard report of one run: 200 nodes" in alone.stdout,
                 alone.stdout + alone.stderr)

    refusals = [
        ("a missing shard", run.reports[:2] + run.reports[3:], "missing the report of shard 2/4"),
        ("a duplicate shard", run.reports + [run.reports[0]], "shard 0/4 is in both"),
        ("a report of another run", run.reports[:3] + [other], "is from a different run"),
    ]
    for what, paths, message in refusals:
        result = merge(bin_dir, paths)
        checks.check(f"fleet merge refuses {what}",
                     result.returncode != 0 and message in result.stderr and not result.stdout,
                     f"exit {result.returncode}: {result.stderr.strip()}")
    result = merge(bin_dir, run.reports[:3] + [other])
    checks.check("the refusal says what differs", "types" in result.stderr, result.stderr)
    check_damaged_reports_are_refused(bin_dir, work, run.reports, checks)


def check_damaged_reports_are_refused(bin_dir: Path, work: Path, paths: list[Path],
                                      checks: Checks) -> None:
    """Shard 1/4 (nodes 50..100) damaged in one field each, merged with the other three:
    refused naming the file and what is wrong, exit 1, no summary, no merged report written."""
    def first_samples(report: dict) -> dict:
        return report["versions"][0]["first"]

    def shorter_times(report: dict) -> None:
        first_samples(report)["us"].pop()

    def node_twice(report: dict) -> None:
        first = first_samples(report)
        first["node"].append(first["node"][0])
        first["us"].append(first["us"][0])

    def node_of_shard_0(report: dict) -> None:
        first_samples(report)["node"][0] = 0

    def holding_51(report: dict) -> None:
        report["versions"][0]["holding"] = 51

    def started_at_epoch(report: dict) -> None:
        report["started_unix_us"] = 0

    def started_an_hour_late(report: dict) -> None:
        report["started_unix_us"] += 3_600_000_000

    source = read_report(paths[1])
    first_nodes = len(first_samples(source)["node"])
    twice = first_samples(source)["node"][0]  # samples are in ACK order, not node order
    cases = [
        ("parallel sample lists of different lengths", shorter_times,
         ["is damaged: versions[0] (cds ",
          f"first lists {first_nodes} nodes but {first_nodes - 1} times"]),
        ("a node counted twice", node_twice,
         ["is damaged: versions[0] (cds ", f"node {twice} is counted twice in first"]),
        ("a node of another shard", node_of_shard_0,
         ["is damaged: versions[0] (cds ",
          "first names node 0, which is not one of the report's 50 nodes (50..100, shard 1/4)"]),
        ("holding above the shard's node count", holding_51,
         ["is damaged: versions[0] (cds ",
          "holding 51 is more than the report's 50 nodes (50..100, shard 1/4)"]),
        ("started_unix_us 0", started_at_epoch,
         ["is damaged: started_unix_us 0 (1970-01-01T00:00:00.000Z) is before"]),
        ("a shard that ran after the others had ended", started_an_hour_late,
         ["started at", "had ended"]),
    ]
    for index, (what, damage, words) in enumerate(cases):
        report = read_report(paths[1])
        damage(report)
        damaged = work / f"damaged-{index}.json"
        damaged.write_text(json.dumps(report) + "\n")
        out = work / f"merged-from-damaged-{index}.json"
        result = merge(bin_dir, [paths[0], damaged, *paths[2:]], ["--report", str(out)])
        missing = [w for w in [str(damaged), *words] if w not in result.stderr]
        checks.check(f"fleet merge refuses {what}, naming the file and what is wrong, and "
                     "writes no merged report",
                     result.returncode == 1 and not missing and not result.stdout
                     and not out.exists(),
                     f"exit {result.returncode}, missing {missing}, merged report written: "
                     f"{out.exists()}: {result.stderr.strip()}")


def full(bin_dir: Path, work: Path, checks: Checks) -> None:
    nodes, shards, clusters, endpoints = 10_000, 4, 100, 10
    fixtures = work / "fixtures"
    fixtures.mkdir()
    write_fixtures(fixtures, clusters, endpoints, 9000)
    server = Server(bin_dir, fixtures)
    port = 9000
    runs: list[Run] = []
    try:
        # A first run on a fresh server is slower (its first responses are encoded, its
        # memory grows): a warm-up run, not measured, takes that. Then the sharded run between
        # the two single runs, so neither kind has the machine at its quietest to itself.
        port += 1
        print("warm-up: 2000 nodes, not measured", flush=True)
        Run("warm-up", 1, 2000, duration_s=8.0, edit_after_s=4.0).go(
            bin_dir, server, work, fixtures, port, clusters, endpoints)
        for name, count in (("single-a", 1), ("sharded", shards), ("single-b", 1)):
            port += 1
            print(f"run {name}: {nodes} nodes in {count} process(es)", flush=True)
            run = Run(name, count, nodes, duration_s=25.0, edit_after_s=12.0)
            run.go(bin_dir, server, work, fixtures, port, clusters, endpoints)
            runs.append(run)
    finally:
        server.stop()

    summaries = {}
    for run in runs:
        merged = merge(bin_dir, run.reports, ["--output", "json"])
        if not checks.check(f"{run.name}: fleet merge", merged.returncode == 0, merged.stderr):
            return
        summaries[run.name] = json.loads(merged.stdout)
    sharded = runs[1]
    reports = [read_report(p) for p in sharded.reports]
    check_split(checks, reports, nodes)
    check_merge_is_exact(checks, "sharded", reports, summaries["sharded"])

    def latest(summary: dict, short: str) -> dict:
        return [v for v in summary["versions"] if v["type"] == short][-1]

    rows = []
    for run in runs:
        name = run.name
        s = summaries[name]
        eds = latest(s, "eds")
        rows.append((name, s["configured"], eds["converge"]["count"], s["first_config"],
                     eds["converge"], run.cpu_s()))
    size = sum(p.stat().st_size for p in sharded.reports)
    print(f"\nthe four shard reports: {size} bytes, {size / nodes:.0f} bytes per node")
    print("| run | configured | converged to the edit | first config p50 / p99 / max ms | "
          "converge p50 / p99 / max ms | fleet CPU | CPU per node |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, configured, converged, first, conv, cpu in rows:
        print(f"| {name} | {configured} | {converged} | "
              f"{first['p50_ms']:.1f} / {first['p99_ms']:.1f} / {first['max_ms']:.1f} | "
              f"{conv['p50_ms']:.1f} / {conv['p99_ms']:.1f} / {conv['max_ms']:.1f} | "
              f"{cpu:.2f} s | {cpu / nodes * 1e6:.0f} µs |")
    print(flush=True)
    counts = {(r[1], r[2]) for r in rows}
    checks.check("the sharded run and both single runs converged the same node count",
                 counts == {(nodes, nodes)}, f"{[(r[0], r[1], r[2]) for r in rows]}")
    # Noise: what two single runs of the same fleet differ by; the merged value must fall in
    # their range widened by that spread (and by a factor 2 for shards that compete for the
    # two cores differently from one process).
    outside = []
    for label, pick in (("first config", lambda s: s["first_config"]),
                        ("converge", lambda s: latest(s, "eds")["converge"])):
        for p in ("p50_ms", "p99_ms", "max_ms"):
            a, b = pick(summaries["single-a"])[p], pick(summaries["single-b"])[p]
            got = pick(summaries["sharded"])[p]
            low, high = min(a, b), max(a, b)
            spread = high - low
            if not (low - spread) / 2 <= got <= (high + spread) * 2:
                outside.append(f"{label} {p} {got} vs single runs {a}, {b}")
    checks.check("every merged percentile is within the single runs' noise", not outside,
                 "; ".join(outside))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--full", action="store_true",
                        help="4 x 2,500 nodes against 10,000 in one process (release binaries)")
    args = parser.parse_args()
    default = REPO / "target" / ("release" if args.full else "debug")
    bin_dir = Path(os.environ.get("BIN_DIR") or default)
    checks = Checks()
    with tempfile.TemporaryDirectory(prefix="xdsloop-fleet-") as tmp:
        (full if args.full else small)(bin_dir, Path(tmp), checks)
    print(f"{checks.passed} passed, {checks.failed} failed")
    return 1 if checks.failed or not checks.passed else 0


if __name__ == "__main__":
    sys.exit(main())
