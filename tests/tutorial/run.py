#!/usr/bin/env python3
"""`make tutorial`: types every command of docs/tutorial.md into real terminals (processes of
the real binaries) and checks that each prints what the page shows, so the tutorial cannot rot.

How the page is read:
- A ```console NAME block is typed into terminal NAME (`server`, `client`, `shell`, ...).
  `$ CMD` runs CMD there (bash, in a temp directory holding a copy of fixtures/demo and of
  client/src, which the labs read); the lines
  after it are what CMD prints, stdout and stderr together as a terminal shows them.
- A command that a later block of the same terminal continues or stops keeps running in its
  terminal; any other command must print exactly the lines shown and exit 0. A query of live
  state (`xdsloop-server status`) is asked again until it says what the page shows (for at most
  QUERY_TIMEOUT_S): a person typing it a moment later sees the server caught up with the ACK
  the client just sent.
- A block that starts without `$` continues the command running in its terminal: the lines
  shown are the next lines it prints.
- `^C` sends SIGINT to the terminal's command, as Ctrl-C does; the lines after it are what it
  prints while stopping, and it must then exit 0.
- `...` alone on a line stands for any number of lines (the rest of a running command's output
  up to the next line shown, in this block or the terminal's next one).
- Lines compare modulo what changes from run to run: times, durations, ports, hashes, and runs
  of spaces (tables re-align around them).
- ```sh blocks (building, PATH) are setup this script does its own way; they are not run.
- Every xdsloop-server and xdsloop-client the page starts gets a free port instead of 18000:
  wrappers first on PATH add `--listen` / `--server`, so the commands run exactly as written.

`run.py PAGE...` checks each page (the tutorials in English and Chinese, docs/tutorial.md and
docs/zh/tutorial.md, and the day-12 labs, docs/lab-day12.md and docs/zh/lab-day12.md, are
written in this format). `run.py --self-test PAGE...` checks the checker: the pure parts, then
broken copies of each page (a command changed, a shown output line changed, a line after `...`
changed; the words changed are the page's own, English or Chinese) that must fail, naming the
page's line. `run.py --show PAGE` prints what each block really prints (for writing
the page; it checks nothing). Standard library only; every process started is stopped by its
process group, also when a check fails.
"""

from __future__ import annotations

import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from page import Failure, Step, compare, normalize, parse

REPO = Path(__file__).resolve().parents[2]
# Absolute: the commands run in a temp directory.
BIN_DIR = Path(os.environ.get("BIN_DIR", REPO / "target" / "debug")).resolve()
# Bounded waits: a step of the loop takes milliseconds; these only end a run that went wrong.
LINE_TIMEOUT_S = 30
EXIT_TIMEOUT_S = 30
# --show: a running command is considered done printing after this much quiet.
QUIET_S = 1.5
QUERY_TIMEOUT_S = 10
QUERY_INTERVAL_S = 0.2
QUERIES = ("xdsloop-server status",)


class Terminal:
    """One terminal: the command running in it and its output, line by line."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.proc: subprocess.Popen[str] | None = None
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.skipping = False
        self.seen: list[str] = []

    def start(self, command: str, cwd: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            ["bash", "-c", command], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True,
        )
        self.lines = queue.Queue()
        self.skipping = False
        self.seen = []
        out = self.proc.stdout
        assert out is not None

        def read() -> None:
            for line in out:
                self.lines.put(line.rstrip("\n"))
            self.lines.put(None)

        threading.Thread(target=read, daemon=True).start()

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def next_line(self, timeout: float) -> str | None:
        """The next line printed, or None once the command closed its output."""
        line = self.lines.get(timeout=timeout)
        if line is not None:
            self.seen.append(line)
        return line

    def signal(self, sig: int) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                pass

    def wait(self, at: str) -> int:
        assert self.proc is not None
        try:
            return self.proc.wait(timeout=EXIT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise Failure(f"{at}: terminal {self.name}: still running after {EXIT_TIMEOUT_S}s")


class Run:
    def __init__(self, page: str, workdir: Path, env: dict[str, str]) -> None:
        self.page = page
        self.workdir = workdir
        self.env = env
        self.terminals: dict[str, Terminal] = {}

    def terminal(self, name: str) -> Terminal:
        return self.terminals.setdefault(name, Terminal(name))

    def step(self, step: Step) -> None:
        term = self.terminal(step.terminal)
        at = f"{self.page}:{step.line}"
        if step.kind == "run" and term.running():
            raise Failure(f"{at}: terminal {term.name} is still running a command")
        if step.kind == "run" and not step.keeps_running:
            return self.one_shot(step, at)
        if step.kind == "run":
            term.start(step.command, self.workdir, self.env)
        elif not term.running() and term.proc is None:
            raise Failure(f"{at}: nothing runs in terminal {term.name}")
        if step.kind == "interrupt":
            term.signal(signal.SIGINT)
        self.expect(term, step)
        if step.kind == "interrupt":
            self.ended(term, at)

    def one_shot(self, step: Step, at: str) -> None:
        """A command that ends: all it prints is compared, and it must exit 0. A query is
        asked again while it says something else, within QUERY_TIMEOUT_S."""
        query = step.command.startswith(QUERIES)
        deadline = time.monotonic() + QUERY_TIMEOUT_S
        while True:
            try:
                done = subprocess.run(
                    ["bash", "-c", step.command], cwd=self.workdir, env=self.env,
                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT, text=True, timeout=EXIT_TIMEOUT_S,
                )
            except subprocess.TimeoutExpired:
                raise Failure(f"{at}: still running after {EXIT_TIMEOUT_S}s: {step.command}")
            printed = done.stdout.splitlines()
            problem = compare(step.expected, printed, self.page)
            if problem is None and done.returncode != 0:
                problem = f"{at}: exit status {done.returncode}"
            if problem is None:
                return
            if not query or time.monotonic() > deadline:
                shown = "\n".join(f"  | {line}" for line in printed)
                raise Failure(f"{problem}\n{step.command} printed:\n{shown}")
            time.sleep(QUERY_INTERVAL_S)

    def expect(self, term: Terminal, step: Step) -> None:
        """The terminal prints the step's lines next (after any `...`)."""
        for number, text in step.expected:
            if text.strip() == "...":
                term.skipping = True
                continue
            want = normalize(text)
            while True:
                got = self.read(term, number, text)
                if got is None:
                    raise Failure(
                        f"{self.page}:{number}: terminal {term.name}: the command ended "
                        f"before printing\n  {text}\n{self.said(term)}"
                    )
                if normalize(got) == want:
                    break
                if not term.skipping:
                    raise Failure(
                        f"{self.page}:{number}: terminal {term.name} printed\n  {got}\n"
                        f"where the page shows\n  {text}\n{self.said(term)}"
                    )
            term.skipping = False

    def read(self, term: Terminal, number: int, text: str) -> str | None:
        try:
            return term.next_line(LINE_TIMEOUT_S)
        except queue.Empty:
            raise Failure(
                f"{self.page}:{number}: terminal {term.name}: waited {LINE_TIMEOUT_S}s for\n"
                f"  {text}\n{self.said(term)}"
            )

    def ended(self, term: Terminal, at: str) -> None:
        """The command exits 0 having printed nothing more than shown (unless `...`)."""
        code = term.wait(at)
        extra = []
        while True:
            line = term.next_line(LINE_TIMEOUT_S)
            if line is None:
                break
            extra.append(line)
        if extra and not term.skipping:
            shown = "\n".join(f"  {line}" for line in extra)
            raise Failure(f"{at}: terminal {term.name} printed more than the page shows:\n{shown}")
        if code != 0:
            raise Failure(f"{at}: terminal {term.name}: exit status {code}\n{self.said(term)}")
        term.proc = None

    @staticmethod
    def said(term: Terminal) -> str:
        last = term.seen[-12:]
        return "its last lines:\n" + "\n".join(f"  | {line}" for line in last)

    def show(self, step: Step) -> None:
        """--show: what the step really prints, for writing the page."""
        term = self.terminal(step.terminal)
        print(f"--- {self.page}:{step.line} {step.terminal} {step.kind} {step.command}")
        if step.kind == "run":
            term.start(step.command, self.workdir, self.env)
        if step.kind == "interrupt":
            term.signal(signal.SIGINT)
        while True:
            try:
                line = term.next_line(QUIET_S if term.running() else LINE_TIMEOUT_S)
            except queue.Empty:
                break
            if line is None:
                term.proc = None
                break
            print(line)

    def stop_all(self) -> list[str]:
        """Stops every command still running; names the terminals that were."""
        left = [t.name for t in self.terminals.values() if t.running()]
        for term in self.terminals.values():
            term.signal(signal.SIGKILL)
        return left


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wrappers(directory: Path, port: int) -> None:
    """`xdsloop-server` and `xdsloop-client` on PATH, pointed at `port` instead of 18000."""
    addr = f"127.0.0.1:{port}"
    server = BIN_DIR / "xdsloop-server"
    client = BIN_DIR / "xdsloop-client"
    scripts = {
        "xdsloop-server": f"""#!/bin/sh
case "$1" in
  status) exec "{server}" "$@" --server {addr} ;;
  transcript|-h|--help|-V|--version) exec "{server}" "$@" ;;
  *) exec "{server}" "$@" --listen {addr} ;;
esac
""",
        "xdsloop-client": f"""#!/bin/sh
case "$1" in
  transcript|fleet|check|-h|--help|-V|--version) exec "{client}" "$@" ;;
  *) exec "{client}" --server {addr} "$@" ;;
esac
""",
    }
    for name, text in scripts.items():
        path = directory / name
        path.write_text(text)
        path.chmod(0o755)


def run_page(page: Path, show: bool = False) -> None:
    """Runs every step of `page`; raises Failure at the first difference."""
    label = os.path.relpath(page, REPO) if page.is_relative_to(REPO) else str(page)
    steps = parse(page.read_text(), label)
    if not steps:
        raise Failure(f"{label}: no ```console blocks to run")
    with tempfile.TemporaryDirectory(prefix="xdsloop-tutorial-") as tmp:
        root = Path(tmp)
        work = root / "work"
        shutil.copytree(REPO / "fixtures" / "demo", work / "fixtures" / "demo")
        # The labs read the client's source as a reader does, from the repository root.
        shutil.copytree(REPO / "client" / "src", work / "client" / "src")
        bin_dir = root / "bin"
        bin_dir.mkdir()
        wrappers(bin_dir, free_port())
        env = {k: v for k, v in os.environ.items() if k != "RUST_LOG"}
        env["PATH"] = f"{bin_dir}{os.pathsep}{BIN_DIR}{os.pathsep}{env.get('PATH', '')}"
        env["NO_COLOR"] = "1"
        run = Run(label, work, env)
        try:
            for step in steps:
                run.show(step) if show else run.step(step)
        finally:
            left = run.stop_all()
        if left and not show:
            raise Failure(f"{label}: still running at the end of the page: {', '.join(left)} "
                          "(end them with ^C)")


def self_test(page: Path) -> None:
    """The checker fails when it should."""
    assert normalize("09:30:00.012 s1  cds  → subscribe") == "<clock> s1 cds → subscribe"
    assert normalize('v"626bfe9598b1a9cf" at 127.0.0.1:40123') == 'v"<hash>" at 127.0.0.1:<port>'
    assert normalize("SYNCED  626bfe95  ACKed 2s ago") == "SYNCED <hash> ACKed <ago>"
    assert normalize("retrying in 0.6s (attempt 1)") == "retrying in <duration> (attempt 1)"
    assert normalize("nonce 12345678 cafe") == "nonce 12345678 cafe", "digits alone are no hash"
    shown = [(1, "a"), (2, "..."), (3, "c")]
    assert compare(shown, ["a", "b", "b", "c"], "p") is None
    assert compare(shown, ["a", "c", "d"], "p").startswith("p:3: printed more")
    assert compare(shown, ["b", "c"], "p").startswith("p:1: printed\n  b")
    assert compare(shown, ["a", "b"], "p").startswith("p:3: never printed")
    steps = parse(
        "```console server\n$ serve\n```\n```console shell\n$ edit\n```\n"
        "```console server\n^C\n...\nbye\n```\n",
        "page",
    )
    kinds = [(s.terminal, s.kind, s.keeps_running) for s in steps]
    assert kinds == [("server", "run", True), ("shell", "run", False),
                     ("server", "interrupt", False)], kinds
    try:
        parse("```console\n$ ls\n```\n", "page")
        raise AssertionError("a console block without a terminal was accepted")
    except Failure as e:
        assert "page:1:" in str(e), e
    lines = page.read_text().splitlines()
    command = re.compile(r"^\$ ")
    narration = re.compile(r"^\d\d:\d\d:\d\d\.\d{3} ")
    # Each kind of break, with the words to change in each language the pages are written in.
    broken = [
        ("a command changed", command, [("--explain", "--explane")]),
        ("a shown output line changed", narration, [("← push", "← pull"), ("← 下发", "← 上传")]),
        ("a line after `...` changed", narration, [("initial [api@", "held [api@")]),
    ]
    for what, kind, edits in broken:
        found = [(n, old, new) for old, new in edits
                 for n, line in enumerate(lines, 1) if kind.match(line) and old in line]
        if what == "a line after `...` changed":
            found = [f for f in found if follows_a_skip(lines, f[0])]
        if not found:
            raise AssertionError(f"{page.name}: no line to break for the check that {what}")
        number, old, new = min(found)
        mutated_lines = list(lines)
        mutated_lines[number - 1] = lines[number - 1].replace(old, new)
        mutated = "\n".join(mutated_lines) + "\n"
        with tempfile.TemporaryDirectory(prefix="xdsloop-tutorial-self-test-") as tmp:
            copy = Path(tmp) / page.name
            copy.write_text(mutated)
            try:
                run_page(copy)
            except Failure as e:
                said = str(e)
                # A changed command shows at the first line it should have printed.
                named = {number, number + 1} if kind is command else {number}
                if not any(f"{page.name}:{n}:" in said for n in named):
                    raise AssertionError(f"{what}: the failure does not name line {number}:\n{said}")
                print(f"PASS the check fails when {what} (line {number}):\n"
                      + "\n".join("  " + line for line in said.splitlines()[:4]))
                continue
            raise AssertionError(f"{what} (line {number}): the page still passed")


def follows_a_skip(lines: list[str], number: int) -> bool:
    """Whether the shown line `number` comes after a `...` in its console block."""
    for line in reversed(lines[:number - 1]):
        if line.strip() == "...":
            return True
        if line.startswith("```"):
            return False
    return False


def main(argv: list[str]) -> int:
    flags = [a for a in argv if a.startswith("--")]
    pages = [Path(a).resolve() for a in argv if not a.startswith("--")]
    if not pages or not set(flags) <= {"--self-test", "--show"}:
        print("usage: run.py [--self-test | --show] PAGE...", file=sys.stderr)
        return 2
    for binary in ("xdsloop-server", "xdsloop-client"):
        if not (BIN_DIR / binary).exists():
            print(f"{BIN_DIR / binary} is missing: run `make bins` first", file=sys.stderr)
            return 2
    for page in pages:
        try:
            if "--self-test" in flags:
                self_test(page)
            else:
                run_page(page, show="--show" in flags)
                if "--show" not in flags:
                    print(f"PASS every command of {page.name} prints what the page shows")
        except (Failure, AssertionError) as e:
            print(f"FAIL {e}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
