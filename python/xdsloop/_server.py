"""`XdsServer`: the `xdsloop-server` binary as a context manager, on a free loopback port."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Callable, Optional, Union

from ._errors import FixtureRejected, ScenarioRefused, ServerFailed, WaitTimeout
from ._journal import Ack, Event, Journal, Nack, type_name

Resource = Mapping[str, Any]
"""A resource in the proto3 JSON mapping with its `"@type"`, as a fixture file holds it."""
FixtureContent = Union[str, bytes, Mapping[str, Any], Sequence[Mapping[str, Any]]]
Rules = Union[str, Mapping[str, Any], Sequence[Mapping[str, Any]]]

BINARY_NAME = "xdsloop-server"
ENV_BINARY = "XDSLOOP_SERVER"
START_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 5.0
DEFAULT_TIMEOUT_S = 10.0
# How often a wait looks again at /status or the transcript: the admin API is HTTP, with no
# event to wait on, and the transcript is flushed every 100 ms.
POLL_S = 0.05
RESOURCES_FILE = "resources.json"
LOG_TAIL_LINES = 60


def find_binary(explicit: Union[str, os.PathLike, None] = None) -> Path:
    """The server binary: `explicit`, else `$XDSLOOP_SERVER`, else the one installed beside this
    Python (the environment's scripts directory, where the wheel puts it), else the PATH."""
    for candidate in (explicit, os.environ.get(ENV_BINARY)):
        if candidate:
            path = Path(candidate)
            if not path.is_file():
                raise ServerFailed(f"no {BINARY_NAME} binary at {path}")
            return path
    beside = Path(sysconfig.get_path("scripts")) / BINARY_NAME
    if beside.is_file():
        return beside
    found = shutil.which(BINARY_NAME)
    if found:
        return Path(found)
    raise ServerFailed(f"{BINARY_NAME} is not installed beside {sys.executable} nor on the PATH; "
                       f"pip install xdsloop, or set {ENV_BINARY}=/path/to/{BINARY_NAME}")


class XdsServer:
    """A running `xdsloop-server` serving a fixture directory, or resources given as dicts.

    Use it as a context manager (or call `start()` and `stop()`)::

        with XdsServer(fixtures="tests/fixtures") as server:
            client = start_my_client(server.address, node_id="n1")
            server.await_ack("n1", "cds")
            server.write_fixture("endpoints.yaml", new_text)   # returns once it is served
            server.await_ack("n1", "eds", server.version("n1", "eds"))

    It listens on `127.0.0.1:0` (a free port, read back from the server), records every
    stream to a transcript in its work directory (what `await_ack`, `await_nack` and
    `requests` read, and `record` copies), and writes its log there (`log_path`). `stop()`
    sends SIGTERM and waits; the work directory is removed unless it was given (`workdir`) or
    `keep=True`.

    Args:
        fixtures: a fixture directory to serve, watched and hot-reloaded.
        resources: resources to serve instead (dicts with `"@type"`), written as JSON to a
            fixture directory of the server's own; `node_resources` adds per-node overlays
            (`{"n1": [...]}`, served as `nodes/n1/`).
        binary: the `xdsloop-server` to run (default: `find_binary()`).
        args: more command-line flags (`["--debounce", "50ms"]`, TLS flags, ...).
        admin_listener: serve the admin routes on a listener of their own (`--admin
            127.0.0.1:0`), so `/status` answers while a scenario's outage closes the xDS port.
        scenario: fault rules in force from the start (`--scenario`), as `scenario()` takes.
        workdir: where the log, the transcript and (for `resources`) the fixtures go.
        env: environment variables for the server (`RUST_LOG` defaults to `info`).
        name: the name in messages and pytest's report (`primary`, `secondary`, ...).
    """

    def __init__(
        self,
        fixtures: Union[str, os.PathLike, None] = None,
        resources: Optional[Iterable[Resource]] = None,
        *,
        node_resources: Optional[Mapping[str, Iterable[Resource]]] = None,
        binary: Union[str, os.PathLike, None] = None,
        args: Sequence[str] = (),
        admin_listener: bool = False,
        scenario: Optional[Rules] = None,
        workdir: Union[str, os.PathLike, None] = None,
        keep: bool = False,
        env: Optional[Mapping[str, str]] = None,
        name: str = BINARY_NAME,
        start_timeout: float = START_TIMEOUT_S,
    ) -> None:
        if fixtures is not None and (resources is not None or node_resources):
            raise ValueError("serve either a fixture directory or resources, not both")
        self.name = name
        self.binary = find_binary(binary)
        self._given_fixtures = Path(fixtures) if fixtures is not None else None
        self._resources = list(resources) if resources is not None else []
        self._node_resources = {n: list(r) for n, r in (node_resources or {}).items()}
        self._args = list(args)
        self._admin_listener = admin_listener
        self._scenario = scenario
        self._keep = keep or workdir is not None
        self._workdir_given = Path(workdir) if workdir is not None else None
        self._env = dict(env or {})
        self._start_timeout = start_timeout
        self._proc: Optional[subprocess.Popen] = None
        self._stdout: list[str] = []
        self._stdout_cond = threading.Condition()
        self._log_file = None
        self.workdir: Optional[Path] = None
        self.fixture_dir: Optional[Path] = None
        self.address = ""
        self.admin_address = ""
        self._journal: Optional[Journal] = None

    # ---- life cycle -------------------------------------------------------------------------

    def __enter__(self) -> "XdsServer":
        return self.start()

    def __exit__(self, kind: Optional[type], error: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = f"on {self.address}" if self.running else "not running"
        return f"<XdsServer {self.name} {state}>"

    def start(self) -> "XdsServer":
        """Starts the server and returns once it listens (its address read from its stdout)."""
        if self._proc is not None:
            raise RuntimeError(f"{self.name} is already started")
        if self._workdir_given is not None:
            self.workdir = self._workdir_given
            self.workdir.mkdir(parents=True, exist_ok=True)
        else:
            self.workdir = Path(tempfile.mkdtemp(prefix="xdsloop-"))
        if self._given_fixtures is not None:
            if not self._given_fixtures.is_dir():
                raise ServerFailed(f"{self._given_fixtures} is not a directory")
            self.fixture_dir = self._given_fixtures
        else:
            self.fixture_dir = self.workdir / "fixtures"
            self.fixture_dir.mkdir(exist_ok=True)
            self._write_resources()
        transcript = self.workdir / "transcript.jsonl"
        argv = [str(self.binary), "--fixtures", str(self.fixture_dir), "--listen", "127.0.0.1:0",
                "--record", str(transcript)]
        if self._admin_listener:
            argv += ["--admin", "127.0.0.1:0"]
        if self._scenario is not None:
            path = self.workdir / "scenario.yaml"
            path.write_text(_rules_text(self._scenario))
            argv += ["--scenario", str(path)]
        argv += self._args
        env = dict(os.environ, NO_COLOR="1")
        env.setdefault("RUST_LOG", "info")
        env.update(self._env)
        self._log_file = open(self.log_path, "w")
        self._proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                      stderr=self._log_file, text=True, errors="replace",
                                      env=env)
        threading.Thread(target=self._pump_stdout, daemon=True).start()
        self._journal = Journal(transcript)
        try:
            self._read_addresses()
        except BaseException:
            self.stop()
            raise
        return self

    def _pump_stdout(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        for line in iter(self._proc.stdout.readline, ""):
            with self._stdout_cond:
                self._stdout.append(line.rstrip("\n"))
                self._stdout_cond.notify_all()
        with self._stdout_cond:
            self._stdout_cond.notify_all()

    def _read_addresses(self) -> None:
        # The first stdout line is `xdsloop-server listening on ADDR` and the second
        # `admin: http://ADDR/status ...` (docs/status.md): no port is guessed.
        deadline = time.monotonic() + self._start_timeout
        with self._stdout_cond:
            while len(self._stdout) < 2:
                left = deadline - time.monotonic()
                if left <= 0 or not self.running:
                    break
                self._stdout_cond.wait(min(left, 0.2))
            lines = list(self._stdout)
        xds = next((l.rsplit(" ", 1)[1] for l in lines if " listening on " in l), None)
        admin = next((l.split("://", 1)[1].split("/", 1)[0] for l in lines
                      if l.startswith("admin: ")), None)
        if not xds or not admin:
            why = "exited" if not self.running else "did not print its addresses"
            raise ServerFailed(f"{self.name} {why} within {self._start_timeout:.0f} s\n"
                               + self.log_tail())
        self.address, self.admin_address = xds, admin

    def stop(self) -> Optional[int]:
        """Stops the server (SIGTERM to its pid, then SIGKILL after 5 s) and returns its exit
        code; a no-op if it is not running. The work directory goes unless it is kept."""
        code = None
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.send_signal(signal.SIGTERM)
                try:
                    self._proc.wait(STOP_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    self._proc.kill()
                    self._proc.wait(STOP_TIMEOUT_S)
            code = self._proc.returncode
            if self._proc.stdout is not None:
                self._proc.stdout.close()
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        if self.workdir is not None and not self._keep and self._proc is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
        return code

    @property
    def running(self) -> bool:
        """Whether the server process is alive."""
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> Optional[int]:
        return self._proc.pid if self._proc is not None else None

    @property
    def port(self) -> int:
        """The xDS port (the admin routes share it unless `admin_listener`)."""
        return int(self.address.rsplit(":", 1)[1])

    # ---- the log ----------------------------------------------------------------------------

    @property
    def log_path(self) -> Path:
        """The server's stderr: every push, ACK, NACK, reload and rejected edit."""
        assert self.workdir is not None, "not started"
        return self.workdir / "server.log"

    def log(self) -> str:
        """The whole log so far."""
        try:
            return self.log_path.read_text(errors="replace")
        except (FileNotFoundError, AssertionError):
            return ""

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        """The log's last lines, headed by the server's name, pid and state."""
        state = "running" if self.running else (
            f"exited with {self._proc.returncode}" if self._proc is not None else "not started")
        body = "\n".join(self.log().splitlines()[-lines:])
        return f"--- {self.name} (pid {self.pid}, {state}), {self.log_path} ---\n{body}"

    def wait_log(self, predicate: Union[str, Callable[[list[str]], Any]],
                 timeout: float = DEFAULT_TIMEOUT_S, since: int = 0) -> Any:
        """Waits until the log (from line `since`) holds a line containing `predicate`, or
        `predicate(lines)` returns something truthy; returns it. `log_mark()` gives `since`."""
        test = predicate if callable(predicate) else (
            lambda lines: next((l for l in lines if predicate in l), None))
        lines: list[str] = []

        def probe():
            nonlocal lines
            lines = self.log().splitlines()[since:]
            return test(lines)
        return self._poll(probe, timeout, lambda: f"the log to show {predicate!r}",
                          lambda: "last lines:\n" + "\n".join(lines[-10:]))

    def log_mark(self) -> int:
        """The number of log lines so far, for `wait_log(since=...)`."""
        return len(self.log().splitlines())

    # ---- the admin API ----------------------------------------------------------------------

    def _url(self, path: str) -> str:
        return f"http://{self.admin_address}{path}"

    def _request(self, method: str, path: str, body: Optional[bytes] = None) -> Any:
        request = urllib.request.Request(self._url(path), data=body, method=method)
        with urllib.request.urlopen(request, timeout=5) as response:
            text = response.read()
        return json.loads(text) if text.strip() else None

    def status(self, node: Optional[str] = None) -> dict:
        """The `/status` document (docs/status.md; `schema` `xdsloop.status.v1`), or only
        `node`'s streams."""
        query = "?node=" + urllib.parse.quote(node) if node else ""
        return self._request("GET", "/status" + query)

    def snapshot(self, node: Optional[str] = None, type: Optional[str] = None) -> dict:
        """`/snapshot`: the resources served (to `node`, of `type`), as proto3 JSON."""
        query = "&".join(f"{k}={urllib.parse.quote(v)}" for k, v in
                         (("node", node), ("type", type)) if v)
        return self._request("GET", "/snapshot" + (f"?{query}" if query else ""))

    def version(self, node: str, type: str) -> Optional[str]:
        """The version of `type` (`cds` or a type URL) served to `node` now."""
        wanted = type_name(type)
        doc = self.status()["snapshot"]
        overlay = next((o for o in doc.get("overlays", []) if o.get("node_id") == node), None)
        for types in ((overlay or {}).get("types", []), doc.get("types", [])):
            for row in types:
                if wanted in (row.get("type"), row.get("type_url")):
                    return row.get("version")
        return None

    # ---- what is served ---------------------------------------------------------------------

    def write_fixture(self, path: Union[str, os.PathLike], content: FixtureContent,
                      timeout: float = DEFAULT_TIMEOUT_S) -> dict:
        """Writes a fixture file (relative to the fixture directory; dicts and lists as JSON)
        by a rename, as editors save, and returns once the server serves the edit: the
        `snapshot` section of `/status` with the new generation. An edit the server rejects
        raises `FixtureRejected` with its reason (file, line and column); the last good
        snapshot stays served."""
        assert self.fixture_dir is not None, "not started"
        target = self.fixture_dir / path
        data = _fixture_bytes(content)
        if target.is_file() and target.read_bytes() == data:
            return self.status()["snapshot"]
        before = self.status()
        generation = before["snapshot"]["generation"]
        reloads = before["reload"].get("count", 0)
        target.parent.mkdir(parents=True, exist_ok=True)
        temp = target.with_name(f".{target.name}.xdsloop-tmp")
        temp.write_bytes(data)
        os.replace(temp, target)
        last = {"seen": "no reload yet"}

        def served():
            doc = self.status()
            if doc["snapshot"]["generation"] > generation:
                return doc["snapshot"]
            reload = doc["reload"]
            if reload.get("count", 0) > reloads and reload.get("ok") is False \
                    and not reload.get("in_progress") and target.name in str(reload.get("error")):
                raise FixtureRejected(f"{self.name} rejected the edit of {target}: "
                                      f"{reload.get('error')}")
            last["seen"] = f"reload {reload}"
            return None
        return self._poll(served, timeout, lambda: f"the edit of {target} to be served",
                          lambda: last["seen"])

    def remove_fixture(self, path: Union[str, os.PathLike],
                       timeout: float = DEFAULT_TIMEOUT_S) -> dict:
        """Deletes a fixture file and returns once the server serves the change."""
        assert self.fixture_dir is not None, "not started"
        generation = self.status()["snapshot"]["generation"]
        (self.fixture_dir / path).unlink()

        def served():
            doc = self.status()["snapshot"]
            return doc if doc["generation"] > generation else None
        return self._poll(served, timeout, lambda: f"the removal of {path} to be served",
                          lambda: "no new generation")

    def set_resources(self, resources: Iterable[Resource], node: Optional[str] = None,
                      timeout: float = DEFAULT_TIMEOUT_S) -> dict:
        """Replaces the resources every node gets (or `node`'s overlay) and returns once they
        are served (as `write_fixture`)."""
        where = f"nodes/{node}/{RESOURCES_FILE}" if node else RESOURCES_FILE
        return self.write_fixture(where, list(resources), timeout)

    def _write_resources(self) -> None:
        assert self.fixture_dir is not None
        if self._resources:
            (self.fixture_dir / RESOURCES_FILE).write_bytes(_fixture_bytes(self._resources))
        for node, resources in self._node_resources.items():
            path = self.fixture_dir / "nodes" / node / RESOURCES_FILE
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(_fixture_bytes(resources))

    # ---- fault scenarios --------------------------------------------------------------------

    def scenario(self, rules: Rules) -> dict:
        """Puts fault rules in force on every stream (`PUT /scenario`, docs/scenarios.md):
        YAML text, a scenario dict (`{"version": 1, "rules": [...]}`) or a list of rules.
        Returns the `scenario` section of `/status`; refused rules raise `ScenarioRefused`
        and the rules in force stay."""
        try:
            return self._request("PUT", "/scenario", _rules_text(rules).encode())
        except urllib.error.HTTPError as err:
            text = err.read().decode(errors="replace")
            try:
                text = json.loads(text).get("error", text)
            except ValueError:
                pass
            raise ScenarioRefused(text) from None

    def clear_scenario(self) -> None:
        """Removes the rules (`DELETE /scenario`) and resyncs every stream."""
        self._request("DELETE", "/scenario")

    def resync(self) -> None:
        """Resyncs every stream with the rules kept (`POST /resync`)."""
        self._request("POST", "/resync")

    def fired(self, rule: str) -> Optional[int]:
        """How often the rule with that id fired (`None`: no such rule in force)."""
        rules = (self.status().get("scenario") or {}).get("rules", [])
        return next((r.get("fired", 0) for r in rules if r.get("id") == rule), None)

    # ---- what nodes did ---------------------------------------------------------------------

    def mark(self) -> int:
        """A point in the server's history: pass it as `since` to count only what follows."""
        return self._journal_().mark()

    def await_ack(self, node: str, type: str, version: Optional[str] = None,
                  timeout: float = DEFAULT_TIMEOUT_S, since: int = 0) -> Ack:
        """Returns once `node` ACKed `type` (`cds`, `eds`, ... or a type URL), at `version` or
        any, on any stream since the server started (or since `mark()`); an ACK before the
        call counts. A timeout raises `WaitTimeout` saying what the node did instead."""
        journal, name = self._journal_(), type_name(type)
        at = f" at version {json.dumps(version)}" if version is not None else ""
        return self._poll(lambda: journal.find_ack(node, name, version, since), timeout,
                          lambda: f"node {json.dumps(node)} to ACK {name}{at}",
                          lambda: "instead, " + journal.describe(node, name))

    def await_nack(self, node: str, type: str, timeout: float = DEFAULT_TIMEOUT_S,
                   since: int = 0) -> Nack:
        """Returns once `node` NACKed `type`: the rejected version and nonce, and the client's
        `error_detail`. A timeout raises `WaitTimeout` saying what the node did instead."""
        journal, name = self._journal_(), type_name(type)
        return self._poll(lambda: journal.find_nack(node, name, since), timeout,
                          lambda: f"node {json.dumps(node)} to NACK {name}",
                          lambda: "instead, " + journal.describe(node, name))

    def requests(self, node: str) -> list[Event]:
        """Every request `node` sent, on all its streams, oldest first (transcript lines)."""
        return self._journal_().requests(node)

    def events(self) -> list[Event]:
        """Every transcript event so far."""
        journal = self._journal_()
        journal.refresh()
        return list(journal.events)

    def record(self, path: Union[str, os.PathLike], timeout: float = DEFAULT_TIMEOUT_S) -> Path:
        """Writes the transcript of every stream so far (docs/transcripts.md) to `path`, once
        the server has flushed all it counted, and returns the path."""
        assert self.workdir is not None, "not started"
        source = self.workdir / "transcript.jsonl"

        def flushed():
            recorder = self.status().get("recorder") or {}
            try:
                text = source.read_bytes()
            except FileNotFoundError:
                return None
            # The header line, then one line per event the recorder counted.
            complete = text[:text.rfind(b"\n") + 1]
            return complete if complete.count(b"\n") >= recorder.get("lines", 0) + 1 else None
        data = self._poll(flushed, timeout, lambda: f"{source} to be flushed",
                          lambda: f"recorder {(self.status().get('recorder'))}")
        out = Path(path)
        out.write_bytes(data)
        return out

    def _journal_(self) -> Journal:
        if self._journal is None:
            raise RuntimeError(f"{self.name} is not started")
        return self._journal

    def _poll(self, probe: Callable[[], Any], timeout: float, what: Callable[[], str],
              seen: Callable[[], str]) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            found = probe()
            if found:
                return found
            if not self.running:
                raise ServerFailed(f"{self.name} exited while waiting for {what()}\n"
                                   + self.log_tail())
            if time.monotonic() >= deadline:
                raise WaitTimeout(f"{what()}: not within {timeout:g} s; {seen()}")
            time.sleep(POLL_S)


def _fixture_bytes(content: FixtureContent) -> bytes:
    if isinstance(content, bytes):
        return content
    if isinstance(content, str):
        return content.encode()
    return (json.dumps(content, indent=2) + "\n").encode()


def _rules_text(rules: Rules) -> str:
    if isinstance(rules, str):
        return rules
    if isinstance(rules, Mapping):
        return json.dumps(rules)
    # JSON is YAML: the server reads either.
    return json.dumps({"version": 1, "rules": list(rules)})
