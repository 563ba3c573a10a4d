#!/usr/bin/env python3
"""`make browser`: the live page in a real headless Chromium, against xdsloop-server with real
xdsloop-clients connected, on a temp copy of fixtures/demo.

The page is loaded first, then the fleet is changed under it, so every check below proves a
live update, not a fresh load:
1. every client's cells are SYNCED and the `--reject` client's CDS cell is NACKED with its
   message;
2. an edit of clusters.yaml: the page shows the new CDS version, then SYNCED for every client;
3. a broken clusters.yaml: the page shows the rejection with its file:line error, and the last
   good version still served; the repaired file is served again;
4. a click on a client's CDS cell opens its conversation: pushes and ACKs, each with its loop
   step and Envoy call, held = served;
5. a node glob in the filter box leaves only the matching rows;
6. with a fleet of 1,000 more nodes (`xdsloop-client fleet`) the grid shows 500 rows and asks
   for a filter, and `fleet-99*` leaves the 11 matching nodes, SYNCED;
7. the page fetched nothing but its own server (no CDN, nothing at run time).
Then the page in Chinese, the words of the course lesson xdsloop grew from (loaded with
`?lang=zh`): the grid's states and the legend explaining SYNCED, PENDING, NACKED and STALE, the
reload banner ok and rejected, the conversation's step labels (建流, 下发, 确认 (ACK), 拒绝
(NACK, 保留旧配置)) with their Envoy calls; the choice is remembered on a plain reload, and the
switch on the page brings English back (also remembered).
Then, in English again: a Delta client's conversation names its wildcard subscription (its first
request naming nothing), not its ACKs (naming nothing too); a SotW client's request naming
nothing after it named resources is shown as unsubscribing, not as the wildcard; the header's
count of requests with a stale nonce says what it counts, in both languages.
With `--screenshot PATH` it also saves the page (README's docs/img/page.png).

Standard library only (tests/browser/cdp.py drives Chromium over a pipe). Every wait is bounded;
every process started here is stopped by its pid, also on failure.
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
import urllib.request
from pathlib import Path

from cdp import Browser, CdpError, find_chromium

REPO = Path(__file__).resolve().parents[2]
BIN_DIR = Path(os.environ.get("BIN_DIR", REPO / "target" / "debug"))
# A push and its ACK take milliseconds; the page moves at most every 250 ms.
LIVE_TIMEOUT_S = 15
CLIENTS = ["web-1", "web-2"]
REJECTER = "strict-1"
REJECT = "cds:api"
# A client started while the page is in Chinese.
LEARNER = "learner-1"
# A client on a Delta stream, subscribing to every cluster.
DELTA = "delta-1"
SOTW_UNSUBSCRIBE = "sotw-unsubscribe"
# How the conversation shows a request naming nothing: the wildcard, or no name at all.
EMPTY_NAMES = ("(none: unsubscribes)", "* (wildcard)")
# `xdsloop-client fleet`: enough nodes that the grid must be cut and filtered.
FLEET = 1000
FLEET_TIMEOUT_S = 120

CELLS = """JSON.stringify([...document.querySelectorAll('td.cell')].map(c => ({
  node: c.dataset.node, type: c.dataset.type, state: c.dataset.state,
  version: c.dataset.version, held: c.dataset.held, stream: c.dataset.stream,
  nack: (c.querySelector('[data-nack]') || {}).textContent || null })))"""
RELOAD = """JSON.stringify({ok: document.getElementById('reload').dataset.ok,
  text: document.getElementById('reload').textContent})"""
TIMELINE = """JSON.stringify([...document.querySelectorAll('#tl-events tbody tr')].map(r => ({
  step: r.dataset.step, text: r.textContent,
  type: r.children.length > 2 ? r.children[2].textContent : null,
  names: r.children.length > 5 ? r.children[5].textContent : null })))"""
# The header's counters as a reader sees them: label, then number.
COUNTERS = """JSON.stringify(Object.fromEntries([...document.querySelectorAll('#counters span')]
  .map(s => [s.dataset.counter, s.textContent])))"""
GRID_SIZE = """JSON.stringify({rows: document.querySelectorAll('#grid tbody tr').length,
  streams: Number((document.querySelector('[data-counter=streams] b') || {}).textContent || 0),
  note: document.getElementById('note').textContent})"""
# The page's words: what a reader sees, not the data attributes the checks above use.
WORDS = """(() => { try { return JSON.stringify({
  fresh: !window.__seen, lang: document.documentElement.lang,
  title: document.querySelector('h1').textContent,
  reload: document.getElementById('reload').textContent,
  ok: document.getElementById('reload').dataset.ok,
  legend: [...document.querySelectorAll('#legend li')].map(li => ({
    state: li.dataset.state, text: li.textContent })),
  cells: [...document.querySelectorAll('td.cell')].map(c => ({ node: c.dataset.node,
    type: c.dataset.type, state: c.dataset.state,
    shown: c.querySelector('.state').textContent })) }); } catch (e) { return null; } })()"""
SCENARIO = """JSON.stringify({hidden: document.getElementById('scenario').hidden,
  text: document.getElementById('scenario').textContent,
  fired: Object.fromEntries([...document.querySelectorAll('#scenario tr[data-rule]')].map(r =>
    [r.dataset.rule, Number(r.querySelector('[data-fired]').dataset.fired)]))})"""
HEAD = """JSON.stringify([...document.querySelectorAll('#tl-head tbody tr')].map(r => ({
  type: r.dataset.type, state: r.dataset.state,
  cells: [...r.querySelectorAll('td')].map(td => td.textContent) })))"""


class Report:
    def __init__(self) -> None:
        self.failed = 0

    def check(self, name: str, fn) -> None:
        try:
            detail = fn()
            print(f"PASS {name}" + (f": {detail}" if detail else ""), flush=True)
        except (CdpError, AssertionError) as e:
            self.failed += 1
            print(f"FAIL {name}: {e}", flush=True)


def start(args: list[str], **kw) -> subprocess.Popen:
    return subprocess.Popen(args, stdin=subprocess.DEVNULL, **kw)


def start_server(fixtures: Path) -> tuple[subprocess.Popen, str]:
    server = start(
        [str(BIN_DIR / "xdsloop-server"), "--fixtures", str(fixtures), "--listen", "127.0.0.1:0"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    first = server.stdout.readline() if server.stdout else ""
    if "listening on" not in first:
        server.kill()
        sys.exit(f"xdsloop-server did not start: {first!r}")
    return server, first.split()[-1]


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def cells(browser: Browser) -> list[dict]:
    return json.loads(browser.evaluate(CELLS))


def cds_of(all_cells: list[dict]) -> dict[str, dict]:
    return {c["node"]: c for c in all_cells if c["type"] == "cds"}


def all_synced(all_cells: list[dict]) -> bool:
    nodes = {c["node"] for c in all_cells}
    return set(CLIENTS) <= nodes and all(
        c["state"] == "SYNCED" for c in all_cells if c["node"] in CLIENTS)


class Checks:
    """The checks, in order, on one open page; each returns what it saw, for the PASS line."""

    def __init__(self, browser: Browser, addr: str, fixtures: Path) -> None:
        self.browser, self.addr = browser, addr
        self.clusters = fixtures / "clusters.yaml"
        self.original = self.clusters.read_text()
        self.before: dict[str, str] = {}

    def fleet_synced_and_rejecter_nacked(self) -> str:
        seen = self.browser.wait_for(
            "every client SYNCED and the rejecter's CDS NACKED", CELLS,
            lambda v: all_synced(json.loads(v)) and
            cds_of(json.loads(v)).get(REJECTER, {}).get("state") == "NACKED",
            LIVE_TIMEOUT_S)
        rejected = cds_of(json.loads(seen))[REJECTER]
        assert "rejected by --reject " + REJECT in (rejected["nack"] or ""), rejected
        self.before.update({n: c["version"] for n, c in cds_of(json.loads(seen)).items()})
        return f"{len(json.loads(seen))} cells; {REJECTER}: {rejected['nack']!r}"

    def edit_shows_new_version_then_synced(self) -> str:
        edited = self.original.replace("connect_timeout: 0.25s", "connect_timeout: 0.5s")
        self.clusters.write_text(edited)
        seen = self.browser.wait_for(
            "the new CDS version, SYNCED on every client", CELLS,
            lambda v: all_synced(json.loads(v)) and all(
                cds_of(json.loads(v))[n]["version"] != self.before[n] for n in CLIENTS),
            LIVE_TIMEOUT_S)
        cds = cds_of(json.loads(seen))
        new = {cds[n]["version"] for n in CLIENTS}
        assert len(new) == 1, f"one version for every client, saw {new}"
        version = new.pop()
        assert all(cds[n]["held"] == version for n in CLIENTS), cds
        self.before["new"] = version
        return f"cds {self.before[CLIENTS[0]]} -> {version}"

    def broken_fixture_shows_the_rejection(self) -> str:
        self.clusters.write_text(self.original + "- name: [unclosed\n")
        seen = json.loads(self.browser.wait_for(
            "the rejection banner", RELOAD, lambda v: json.loads(v)["ok"] == "false",
            LIVE_TIMEOUT_S))
        assert re.search(r"clusters\.yaml: line \d+", seen["text"]), seen["text"]
        cds = cds_of(cells(self.browser))
        assert all(cds[n]["version"] == self.before["new"] for n in CLIENTS), \
            "the last good version stays served"
        self.clusters.write_text(self.original)
        self.browser.wait_for("the repaired file served", RELOAD,
                              lambda v: json.loads(v)["ok"] == "true", LIVE_TIMEOUT_S)
        return seen["text"].splitlines()[-1]

    def conversation_shows_acks(self) -> str:
        self.browser.wait_for("SYNCED again", CELLS, lambda v: all_synced(json.loads(v)),
                              LIVE_TIMEOUT_S)
        self.browser.evaluate(
            f"document.querySelector('td.cell[data-node=\"{CLIENTS[0]}\"][data-type=cds]')"
            ".click()")
        rows = json.loads(self.browser.wait_for(
            "ACK rows in the conversation", TIMELINE,
            lambda v: sum(r["step"] == "ack" for r in json.loads(v)) >= 2, LIVE_TIMEOUT_S))
        acks = [r for r in rows if r["step"] == "ack"]
        assert all("apply + ACK" in r["text"] and "onConfigUpdate" in r["text"] for r in acks)
        assert any(r["step"] == "push" and "onDiscoveryResponse" in r["text"] for r in rows)
        head = json.loads(self.browser.wait_for(
            "the stream's types, held = served", HEAD,
            lambda v: any(h["type"] == "cds" and h["state"] == "SYNCED"
                          for h in json.loads(v)), LIVE_TIMEOUT_S))
        cds = next(h for h in head if h["type"] == "cds")
        assert cds["cells"][2] == cds["cells"][3], f"held vs served: {cds['cells']}"
        return f"{len(rows)} events, {len(acks)} ACKs"

    def rejecter_conversation_shows_the_error(self) -> str:
        self.browser.evaluate(
            f"document.querySelector('td.cell[data-node=\"{REJECTER}\"][data-type=cds]')"
            ".click()")
        rows = json.loads(self.browser.wait_for(
            "a NACK with its error_detail", TIMELINE,
            lambda v: any(r["step"] == "nack" for r in json.loads(v)), LIVE_TIMEOUT_S))
        nack = next(r for r in rows if r["step"] == "nack")
        assert "error_detail" in nack["text"] and REJECT in nack["text"], nack["text"]
        return "reject + NACK with error_detail in full"

    def scenario_in_force_shows_its_rules_and_fired_counts(self) -> str:
        storm = ("version: 1\nrules:\n  - id: storm\n    match: { node: web-1, type: cds }\n"
                 "    times: 3\n    do: { ignore_acks: {} }\n")
        self.admin("PUT", "/scenario", storm)
        self.clusters.write_text(self.original.replace("connect_timeout: 0.25s",
                                                       "connect_timeout: 0.75s"))
        seen = json.loads(self.browser.wait_for(
            "the scenario with storm fired 3 times", SCENARIO,
            lambda v: json.loads(v)["fired"].get("storm") == 3, LIVE_TIMEOUT_S))
        assert not seen["hidden"] and "ignore_acks" in seen["text"], seen
        assert "null" not in seen["text"], seen["text"]
        self.admin("DELETE", "/scenario")
        self.browser.wait_for("no scenario shown", SCENARIO,
                              lambda v: json.loads(v)["hidden"], LIVE_TIMEOUT_S)
        self.clusters.write_text(self.original)
        return seen["text"]

    def admin(self, method: str, path: str, body: str | None = None) -> None:
        data = body.encode() if body is not None else None
        request = urllib.request.Request(f"http://{self.addr}{path}", data=data, method=method)
        urllib.request.urlopen(request, timeout=5).close()

    def node_filter_shows_matching_nodes_only(self) -> str:
        self.browser.evaluate("(() => { const f = document.getElementById('filter');"
                         " f.value = 'web-*'; f.dispatchEvent(new Event('input')); })()")
        seen = self.browser.wait_for(
            "only web-* rows", CELLS,
            lambda v: {c["node"] for c in json.loads(v)} == set(CLIENTS), LIVE_TIMEOUT_S)
        return f"{len(json.loads(seen))} cells, nodes {sorted(set(CLIENTS))}"

    def a_thousand_streams_fit_in_500_rows_and_a_filter(self) -> str:
        fleet = start([str(BIN_DIR / "xdsloop-client"), "fleet", "--server", self.addr,
                       "--clients", str(FLEET)],
                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            self.browser.evaluate("(() => { const f = document.getElementById('filter');"
                             " f.value = ''; f.dispatchEvent(new Event('input')); })()")
            seen = json.loads(self.browser.wait_for(
                f"{FLEET} more streams, 500 rows and a note", GRID_SIZE,
                lambda v: json.loads(v)["streams"] >= FLEET + 3
                and json.loads(v)["rows"] == 500 and "filter" in json.loads(v)["note"],
                FLEET_TIMEOUT_S))
            self.browser.evaluate("(() => { const f = document.getElementById('filter');"
                             " f.value = 'fleet-99*'; f.dispatchEvent(new Event('input')); })()")
            rows = self.browser.wait_for(
                "the 11 fleet-99* nodes, SYNCED", CELLS,
                lambda v: len({c["node"] for c in json.loads(v)}) == 11
                and all(c["state"] == "SYNCED" for c in json.loads(v)), FLEET_TIMEOUT_S)
            nodes = sorted({c["node"] for c in json.loads(rows)})
            return f"{seen['streams']} streams; {seen['note']!r}; filtered: {nodes[0]}..{nodes[-1]}"
        finally:
            stop(fleet)

    def delta_wildcard_subscription_is_named_in_the_conversation(self) -> str:
        # Delta requests list changes only: the first CDS request of this client names no
        # cluster (the wildcard), and so do its ACKs, which subscribe to nothing.
        delta = start([str(BIN_DIR / "xdsloop-client"), "--server", self.addr,
                       "--node-id", DELTA, "--delta", "--types", "cds"],
                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            self.browser.wait_for("the Delta client SYNCED", CELLS,
                                  lambda v: cds_of(json.loads(v)).get(DELTA, {}).get("state")
                                  == "SYNCED", LIVE_TIMEOUT_S)
            self.browser.evaluate(
                f"document.querySelector('td.cell[data-node=\"{DELTA}\"][data-type=cds]')"
                ".click()")
            rows = json.loads(self.browser.wait_for(
                "the Delta client's subscribe and ACK", TIMELINE,
                lambda v: {"subscribe", "ack"} <= {r["step"] for r in json.loads(v)},
                LIVE_TIMEOUT_S))
        finally:
            stop(delta)
        subscribe = next(r for r in rows if r["step"] == "subscribe")
        assert subscribe["type"] == "cds", subscribe
        assert subscribe["names"] == "* (wildcard)", subscribe
        acks = [r for r in rows if r["step"] == "ack"]
        assert all(r["names"] == "" for r in acks), acks
        return f"subscribe: {subscribe['names']!r}; {len(acks)} ACK(s) naming nothing"

    def sotw_request_naming_nothing_after_names_unsubscribes(self) -> str:
        # SotW: a request naming nothing is the legacy wildcard only before the client named
        # resources of its type. This client names web and api in EDS (following CDS); once
        # its node's clusters stop using EDS, its next EDS request names nothing: it
        # unsubscribes from every endpoint set.
        node_dir = self.clusters.parent / "nodes" / SOTW_UNSUBSCRIBE
        sotw = start([str(BIN_DIR / "xdsloop-client"), "--server", self.addr, "--node-id",
                      SOTW_UNSUBSCRIBE, "--types", "cds,eds", "--follow-deps"],
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            self.browser.wait_for(
                "the SotW client's EDS SYNCED", CELLS,
                lambda v: any(c["node"] == SOTW_UNSUBSCRIBE and c["type"] == "eds"
                              and c["state"] == "SYNCED" for c in json.loads(v)),
                LIVE_TIMEOUT_S)
            node_dir.mkdir(parents=True)
            (node_dir / "clusters.yaml").write_text(
                self.original.replace("type: EDS", "type: STATIC"))
            self.browser.evaluate(
                "document.querySelector("
                f"'td.cell[data-node=\"{SOTW_UNSUBSCRIBE}\"][data-type=eds]').click()")
            rows = json.loads(self.browser.wait_for(
                "its EDS request naming nothing", TIMELINE,
                lambda v: any(r["type"] == "eds" and r["names"] in EMPTY_NAMES
                              for r in json.loads(v)), LIVE_TIMEOUT_S))
        finally:
            stop(sotw)
            shutil.rmtree(node_dir.parent, ignore_errors=True)
        named = [r["names"] for r in rows if r["type"] == "eds" and "web" in (r["names"] or "")]
        empty = next(r for r in rows if r["type"] == "eds" and r["names"] in EMPTY_NAMES)
        assert named, rows
        assert empty["names"] == "(none: unsubscribes)", empty
        return f"named {named[0]!r}, then {empty['names']!r} ({empty['step']})"

    def stale_nonce_counter_says_what_it_counts(self) -> str:
        # The STALE state is a client behind the snapshot; this counter counts requests the
        # server ignored because their nonce was not the latest (S4).
        shown = json.loads(self.browser.wait_for(
            "the header's counters", COUNTERS, lambda v: "stale" in json.loads(v),
            LIVE_TIMEOUT_S))
        label = re.sub(r"\s*\d+$", "", shown["stale"])
        assert label == "requests with an outdated nonce", shown["stale"]
        return repr(shown["stale"])

    def words(self) -> dict:
        return json.loads(self.browser.evaluate(WORDS) or "null")

    def load(self, url: str, what: str, check) -> dict:
        """Loads `url` afresh and waits until the new page's words satisfy `check`."""
        self.browser.evaluate("window.__seen = true")
        self.browser.navigate(url)
        seen = self.browser.wait_for(
            what, WORDS, lambda v: v is not None and json.loads(v)["fresh"] and
            check(json.loads(v)), LIVE_TIMEOUT_S)
        return json.loads(seen)

    def chinese_by_query_names_states_and_explains_them(self) -> str:
        def ready(w: dict) -> bool:
            shown = {(c["node"], c["type"]): c["shown"] for c in w["cells"]}
            return (w["lang"] == "zh" and shown.get((CLIENTS[0], "cds")) == "已同步"
                    and shown.get((REJECTER, "cds")) == "已拒绝")
        w = self.load(f"http://{self.addr}/?lang=zh", "the grid in Chinese", ready)
        assert w["title"] == "xdsloop：配置订阅闭环，实时", w["title"]
        assert re.fullmatch(r"第 \d+ 次重载成功：正在下发第 \d+ 代配置", w["reload"]), w["reload"]
        legend = {li["state"]: li["text"] for li in w["legend"]}
        assert list(legend) == ["SYNCED", "PENDING", "NACKED", "STALE"], legend
        for state, name, means in [("SYNCED", "已同步", "客户端已确认 (ACK)"),
                                   ("PENDING", "待确认", "还没回应"),
                                   ("NACKED", "已拒绝", "保留旧配置"),
                                   ("STALE", "落后", "比当前快照旧")]:
            assert legend[state].startswith(f"{name} {state}") and means in legend[state], \
                legend[state]
        counters = json.loads(self.browser.evaluate(COUNTERS))
        assert counters["stale"].startswith("过期 nonce 的请求 "), counters
        return f"cells 已同步 / 已拒绝; {w['reload']!r}; legend {legend['NACKED']!r}"

    def chinese_reload_banner_tells_a_rejected_edit(self) -> str:
        self.clusters.write_text(self.original + "- name: [unclosed\n")
        seen = json.loads(self.browser.wait_for(
            "the rejection banner in Chinese", RELOAD, lambda v: json.loads(v)["ok"] == "false",
            LIVE_TIMEOUT_S))
        assert re.match(r"修改被拒绝，仍在下发第 \d+ 代配置：\n", seen["text"]), seen["text"]
        assert re.search(r"clusters\.yaml: line \d+", seen["text"]), seen["text"]
        self.clusters.write_text(self.original)
        self.browser.wait_for("the repaired file served", RELOAD,
                              lambda v: json.loads(v)["ok"] == "true", LIVE_TIMEOUT_S)
        return seen["text"].splitlines()[0]

    def chinese_conversation_uses_the_lessons_step_labels(self) -> str:
        # A new client: its conversation still holds its first steps (the ring keeps the last
        # few events of a stream).
        learner = start([str(BIN_DIR / "xdsloop-client"), "--server", self.addr,
                         "--node-id", LEARNER, "--types", "cds"],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            return self.chinese_conversations()
        finally:
            stop(learner)

    def chinese_conversations(self) -> str:
        self.browser.wait_for("the new client SYNCED", CELLS,
                              lambda v: cds_of(json.loads(v)).get(LEARNER, {}).get("state")
                              == "SYNCED", LIVE_TIMEOUT_S)
        self.browser.evaluate(
            f"document.querySelector('td.cell[data-node=\"{LEARNER}\"][data-type=cds]')"
            ".click()")
        rows = json.loads(self.browser.wait_for(
            "an ACK in the Chinese conversation", TIMELINE,
            lambda v: any(r["step"] == "ack" for r in json.loads(v)), LIVE_TIMEOUT_S))
        by_step = {}
        for r in rows:
            by_step.setdefault(r["step"], r["text"])
        for step, title, call in [("established", "建流", "establishNewStream"),
                                  ("subscribe", "订阅", "sendDiscoveryRequest"),
                                  ("push", "下发", "onDiscoveryResponse"),
                                  ("ack", "确认 (ACK)", "sendDiscoveryRequest（version = 新版本")]:
            assert step in by_step, f"no {step} row: {rows}"
            assert by_step[step].startswith(title) or title in by_step[step], by_step[step]
            assert call in by_step[step], by_step[step]
        head = json.loads(self.browser.evaluate(HEAD))
        assert any(h["cells"][1] == "已同步" for h in head), head
        self.browser.evaluate(
            f"document.querySelector('td.cell[data-node=\"{REJECTER}\"][data-type=cds]')"
            ".click()")
        rows = json.loads(self.browser.wait_for(
            "a NACK in the Chinese conversation", TIMELINE,
            lambda v: any(r["step"] == "nack" for r in json.loads(v)), LIVE_TIMEOUT_S))
        nack = next(r for r in rows if r["step"] == "nack")
        assert "拒绝 (NACK, 保留旧配置)" in nack["text"], nack["text"]
        assert "onConfigUpdateFailed(UpdateRejected)" in nack["text"], nack["text"]
        assert "error_detail (3)" in nack["text"] and REJECT in nack["text"], nack["text"]
        return f"{len(by_step)} kinds of step; {nack['text'][:40]!r}"

    def language_is_remembered_and_switched_back(self) -> str:
        w = self.load(f"http://{self.addr}/", "a plain reload still in Chinese",
                      lambda w: w["lang"] == "zh" and w["cells"])
        assert "已同步" in {c["shown"] for c in w["cells"]}, w["cells"]
        self.browser.evaluate("document.querySelector('#lang button[data-lang=en]').click()")
        w = json.loads(self.browser.wait_for(
            "English again after the switch", WORDS,
            lambda v: v is not None and json.loads(v)["lang"] == "en", LIVE_TIMEOUT_S))
        assert w["title"] == "xdsloop: the loop, live", w["title"]
        assert w["reload"].startswith("reload #"), w["reload"]
        assert {c["shown"] for c in w["cells"]} <= {"SYNCED", "PENDING", "NACKED", "STALE"}
        assert w["legend"][0]["text"].startswith("SYNCED the latest response"), w["legend"]
        w = self.load(f"http://{self.addr}/", "a plain reload in English",
                      lambda w: w["lang"] == "en" and w["cells"])
        return "zh kept on reload; English chosen on the page, kept on reload"

    def nothing_fetched_elsewhere(self) -> str:
        urls = []
        while not self.browser.events.empty():
            event = self.browser.events.get()
            if event.get("method") == "Network.requestWillBeSent":
                urls.append(event["params"]["request"]["url"])
        foreign = [u for u in urls if not u.startswith(f"http://{self.addr}/")]
        assert urls and not foreign, f"fetched elsewhere: {foreign}"
        return f"{len(urls)} requests, all to http://{self.addr}/"


def run(browser: Browser, addr: str, fixtures: Path, report: Report, shot: str | None) -> None:
    """Loads the page once, then runs every check on it (the fleet changes under it)."""
    browser.call("Network.enable", session=True)
    browser.navigate(f"http://{addr}/")
    checks = Checks(browser, addr, fixtures)
    for name, check in [
        ("page_shows_every_client_synced_and_the_reject_client_nacked",
         checks.fleet_synced_and_rejecter_nacked),
        ("page_edit_shows_the_new_version_then_synced_for_every_client",
         checks.edit_shows_new_version_then_synced),
        ("page_broken_fixture_shows_the_rejection_with_file_line",
         checks.broken_fixture_shows_the_rejection),
        ("page_stream_conversation_shows_its_acks_with_step_labels",
         checks.conversation_shows_acks),
        ("page_reject_client_conversation_shows_the_nack_error_detail",
         checks.rejecter_conversation_shows_the_error),
        ("page_shows_the_scenario_in_force_and_each_rule_s_fired_count",
         checks.scenario_in_force_shows_its_rules_and_fired_counts),
    ]:
        report.check(name, check)
    if shot:
        Path(shot).parent.mkdir(parents=True, exist_ok=True)
        browser.screenshot(shot)
        print(f"screenshot: {shot}")
    for name, check in [
        ("page_in_chinese_by_query_names_the_states_and_explains_them",
         checks.chinese_by_query_names_states_and_explains_them),
        ("page_in_chinese_reload_banner_tells_a_rejected_edit",
         checks.chinese_reload_banner_tells_a_rejected_edit),
        ("page_in_chinese_conversation_uses_the_lessons_step_labels",
         checks.chinese_conversation_uses_the_lessons_step_labels),
        ("page_language_is_remembered_and_switched_back_on_the_page",
         checks.language_is_remembered_and_switched_back),
    ]:
        report.check(name, check)
    for name, check in [
        ("page_delta_conversation_names_the_wildcard_subscription_not_its_acks",
         checks.delta_wildcard_subscription_is_named_in_the_conversation),
        ("page_sotw_request_naming_nothing_after_names_shows_it_unsubscribes",
         checks.sotw_request_naming_nothing_after_names_unsubscribes),
        ("page_counter_of_stale_nonce_requests_says_what_it_counts",
         checks.stale_nonce_counter_says_what_it_counts),
        ("page_node_filter_shows_matching_nodes_only",
         checks.node_filter_shows_matching_nodes_only),
        ("page_with_1000_streams_shows_500_rows_and_filters_by_node",
         checks.a_thousand_streams_fit_in_500_rows_and_a_filter),
        ("page_loads_nothing_from_elsewhere", checks.nothing_fetched_elsewhere),
    ]:
        report.check(name, check)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--screenshot", help="save a PNG of the page here at the end")
    args = parser.parse_args()
    chromium = find_chromium()
    if chromium is None:
        print("chromium not found: `make browser` installs it (apt-get install -y chromium)")
        return 1
    report = Report()
    procs: list[subprocess.Popen] = []
    browser = None
    with tempfile.TemporaryDirectory(prefix="xdsloop-browser-") as tmp:
        fixtures = Path(tmp) / "fixtures"
        shutil.copytree(REPO / "fixtures" / "demo", fixtures)
        server, addr = start_server(fixtures)
        procs.append(server)
        try:
            client = [str(BIN_DIR / "xdsloop-client"), "--server", addr, "--node-id"]
            quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
            for node in CLIENTS:
                procs.append(start(client + [node], **quiet))
            procs.append(start(client + [REJECTER, "--reject", REJECT], **quiet))
            browser = Browser(chromium)
            run(browser, addr, fixtures, report, args.screenshot)
        finally:
            if browser is not None:
                browser.close()
            for proc in reversed(procs):
                stop(proc)
    print(f"browser: {'all passed' if report.failed == 0 else f'{report.failed} failed'}")
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
