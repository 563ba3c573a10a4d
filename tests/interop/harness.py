"""Process and environment plumbing for the interop run (standard library only).

- `Proc`: a child process whose stdout/stderr lines are collected by reader threads, with
  bounded waits on them, stopped by its own pid (SIGTERM, then SIGKILL).
- `stop_all`: stops every `Proc` still running; registered with atexit and on SIGTERM/SIGINT.
- `ensure_venv`: the cached virtual environment with the pinned PyPI packages.
- `build_server`: builds `xdsloop-server` with cargo and returns the binary's path.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

ANSI = re.compile(r"\x1b\[[0-9;]*m")
# Bounds on things that download or compile: generous because a fresh machine does both once.
VENV_TIMEOUT_S = 900
BUILD_TIMEOUT_S = 3600
STOP_TIMEOUT_S = 5

_running: list["Proc"] = []


class Setup(Exception):
    """A prerequisite failed (no venv, no binary, a process did not start): no checks can run."""


class Stream:
    """Lines read from one pipe, with a condition to wait on new ones."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.closed = False
        self.cond = threading.Condition()

    def pump(self, pipe) -> None:
        for raw in iter(pipe.readline, ""):
            with self.cond:
                self.lines.append(ANSI.sub("", raw.rstrip("\n")))
                self.cond.notify_all()
        with self.cond:
            self.closed = True
            self.cond.notify_all()

    def mark(self) -> int:
        with self.cond:
            return len(self.lines)

    def wait(self, predicate, timeout: float):
        """Waits until `predicate(lines)` returns something truthy; returns it, or None on
        timeout or when the pipe closed without it."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                found = predicate(self.lines)
                if found or self.closed:
                    return found or None
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.cond.wait(left)


class Proc:
    """A child process with captured output, always stopped by its own pid."""

    def __init__(self, name: str, argv: list[str], env: dict | None = None, cwd=None):
        self.name = name
        self.argv = argv
        self.popen = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            env=env,
            cwd=cwd,
        )
        _running.append(self)
        self.out = Stream()
        self.err = Stream()
        for stream, pipe in ((self.out, self.popen.stdout), (self.err, self.popen.stderr)):
            threading.Thread(target=stream.pump, args=(pipe,), daemon=True).start()

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def stop(self) -> None:
        if self in _running:
            _running.remove(self)
        if self.popen.poll() is not None:
            return
        self.popen.terminate()  # SIGTERM to this pid only
        try:
            self.popen.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait(STOP_TIMEOUT_S)

    def tail(self, count: int = 25) -> str:
        lines = [f"  [{self.name} stdout] {line}" for line in self.out.lines[-count:]]
        lines += [f"  [{self.name} stderr] {line}" for line in self.err.lines[-count:]]
        status = "running" if self.alive() else f"exited with {self.popen.returncode}"
        return f"--- {self.name} (pid {self.pid}, {status}) ---\n" + "\n".join(lines)


def stop_all() -> None:
    for proc in reversed(list(_running)):
        try:
            proc.stop()
        except Exception as err:  # keep stopping the others
            print(f"could not stop {proc.name} (pid {proc.pid}): {err}", file=sys.stderr)


def _on_signal(signum, _frame) -> None:
    # Turn SIGTERM into an exception so `finally` blocks run, like Ctrl-C does.
    raise SystemExit(128 + signum)


def install_cleanup() -> None:
    atexit.register(stop_all)
    signal.signal(signal.SIGTERM, _on_signal)
    # A shell starts background jobs with SIGINT ignored; Ctrl-C must still stop the run.
    signal.signal(signal.SIGINT, signal.default_int_handler)


def free_port() -> int:
    """A loopback port that was free a moment ago (bind 0, read it, release it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_tcp(port: int, proc: Proc, timeout: float) -> bool:
    """Waits until something accepts TCP on 127.0.0.1:port, while `proc` is alive."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.alive():
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.05)  # polling a port: there is no event to wait on
    return False


def ensure_venv(venv: Path, requirements: Path) -> Path:
    """Creates (once) the virtual environment with the pinned packages; returns its python.
    The venv is rebuilt when the requirements or the Python version change."""
    stamp_text = hashlib.sha256(requirements.read_bytes() + sys.version.encode()).hexdigest()
    stamp = venv / ".xdsloop-stamp"
    python = venv / "bin" / "python"
    if stamp.exists() and stamp.read_text() == stamp_text and python.exists():
        return python
    try:
        import ensurepip  # noqa: F401  (venv needs it to install pip)
    except ImportError:
        raise Setup(
            f"{sys.executable} has no ensurepip, so it cannot create a virtual environment "
            "with pip. On Debian/Ubuntu: apt-get install python3-venv"
        )
    if venv.exists():
        shutil.rmtree(venv)
    print(f"creating {venv} and installing {requirements.name} from PyPI", flush=True)
    _run([sys.executable, "-m", "venv", str(venv)], "python3 -m venv", VENV_TIMEOUT_S)
    pip = [str(python), "-m", "pip", "--disable-pip-version-check", "--no-input"]
    _run(pip + ["install", "-q", "-r", str(requirements)], "pip install", VENV_TIMEOUT_S)
    stamp.write_text(stamp_text)
    return python


def ensure_node_modules(project: Path) -> list[str]:
    """Installs (once) the npm packages pinned in `project`'s package-lock.json with `npm ci`;
    returns the command that runs its client.js. Reinstalled when the lock file changes."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        raise Setup("node and npm are needed for the grpc-js-xds client (Debian: apt-get "
                    "install nodejs npm)")
    lock = project / "package-lock.json"
    stamp_text = hashlib.sha256(lock.read_bytes()).hexdigest()
    stamp = project / "node_modules" / ".xdsloop-stamp"
    if not (stamp.exists() and stamp.read_text() == stamp_text):
        print(f"installing {project / 'package.json'} from npm", flush=True)
        _run([npm, "ci", "--no-audit", "--no-fund", "--prefix", str(project)], "npm ci",
             VENV_TIMEOUT_S)
        stamp.write_text(stamp_text)
    return [node, str(project / "client.js")]


def build_server(repo: Path) -> Path:
    """Builds the server with cargo and returns the binary cargo reports (CARGO_TARGET_DIR aware)."""
    cargo = os.environ.get("CARGO", "cargo")
    argv = [cargo, "build", "-p", "xdsloop-server", "--bin", "xdsloop-server",
            "--message-format=json-render-diagnostics"]
    print("building xdsloop-server", flush=True)
    try:
        done = subprocess.run(argv, cwd=repo, stdout=subprocess.PIPE, text=True,
                              timeout=BUILD_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise Setup(f"`{' '.join(argv)}` failed: {err}")
    if done.returncode != 0:
        raise Setup(f"`{' '.join(argv)}` exited with {done.returncode}")
    for line in done.stdout.splitlines():
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if msg.get("reason") == "compiler-artifact" and msg.get("executable") \
                and msg["target"]["name"] == "xdsloop-server":
            return Path(msg["executable"])
    raise Setup("cargo built xdsloop-server but reported no executable")


def _run(argv: list[str], what: str, timeout: float) -> None:
    try:
        done = subprocess.run(argv, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise Setup(f"{what} failed: {err}")
    if done.returncode != 0:
        raise Setup(f"{what} exited with {done.returncode}: {' '.join(argv)}")
