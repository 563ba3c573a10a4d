#!/usr/bin/env python3
"""`make python-package`: builds the `xdsloop` wheel (maturin, dev profile), installs it into a
fresh virtual environment with nothing of the project on its path, and runs tests/python there
with pytest: gRPC's xDS client against the plugin's `xds_server`.

Standard library only. The build tool (maturin, pinned in build-requirements.txt) lives in a
cached venv under the cargo target dir; the test venv is made anew on every run in a temporary
directory (pip's cache keeps that quick) and removed after it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
DATA_SCRIPTS = REPO / "python" / "xdsloop.data" / "scripts"
TIMEOUT_S = 1800


def run(argv: list, **kwargs) -> subprocess.CompletedProcess:
    print("+ " + " ".join(str(a) for a in argv), flush=True)
    return subprocess.run([str(a) for a in argv], check=True, timeout=TIMEOUT_S, **kwargs)


def target_dir() -> Path:
    configured = os.environ.get("CARGO_TARGET_DIR")
    return Path(configured).resolve() if configured else REPO / "target"


def venv(path: Path, requirements: Path | None = None) -> Path:
    run([sys.executable, "-m", "venv", path])
    python = path / "bin" / "python"
    if requirements is not None:
        run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", "-r",
             requirements])
    return python


def build_tool() -> Path:
    """The cached venv with maturin, rebuilt when its pins or the Python version change."""
    requirements = HERE / "build-requirements.txt"
    home = target_dir() / "python-build"
    stamp = hashlib.sha256(requirements.read_bytes() + sys.version.encode()).hexdigest()
    maturin, made = home / "bin" / "maturin", home / ".xdsloop-stamp"
    if not (maturin.exists() and made.exists() and made.read_text() == stamp):
        shutil.rmtree(home, ignore_errors=True)
        venv(home, requirements)
        made.write_text(stamp)
    return maturin


def client_binary() -> Path:
    """Builds the workspace's binaries (dev profile), as `make bins` does (the same features,
    so nothing is built twice), and returns the client's path as cargo reports it."""
    cargo = os.environ.get("CARGO", "cargo")
    done = run([cargo, "build", "--workspace", "--bins",
                "--message-format=json-render-diagnostics"], cwd=REPO, stdout=subprocess.PIPE,
               text=True)
    for line in done.stdout.splitlines():
        msg = json.loads(line) if line.startswith("{") else {}
        if msg.get("reason") == "compiler-artifact" and msg.get("executable") \
                and msg["target"]["name"] == "xdsloop-client":
            return Path(msg["executable"])
    raise SystemExit("cargo built xdsloop-client but reported no executable")


def build_wheel(out: Path) -> Path:
    maturin = build_tool()
    # The wheel's scripts: maturin builds the server binary itself; the client goes in the
    # wheel's .data/scripts directory (git-ignored), installed beside it.
    DATA_SCRIPTS.mkdir(parents=True, exist_ok=True)
    shutil.copy2(client_binary(), DATA_SCRIPTS / "xdsloop-client")
    shutil.rmtree(out, ignore_errors=True)
    env = dict(os.environ)
    env.setdefault("CARGO", "cargo")
    run([maturin, "build", "--profile", "dev", "--out", out], cwd=REPO, env=env)
    wheels = sorted(out.glob("xdsloop-*.whl"))
    if len(wheels) != 1:
        raise SystemExit(f"expected one wheel in {out}, found {wheels}")
    return wheels[0]


def main() -> int:
    wheel = build_wheel(target_dir() / "wheels")
    work = Path(tempfile.mkdtemp(prefix="xdsloop-python-package-"))
    try:
        python = venv(work / "venv", HERE / "requirements.txt")
        run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
             wheel])
        # The tests run from a copy, in a directory of their own: the only xdsloop the venv can
        # import is the installed one.
        tests = work / "tests"
        shutil.copytree(HERE, tests, ignore=shutil.ignore_patterns(
            "run.py", "*requirements.txt", "__pycache__"))
        # The guide: its complete test runs as it is printed there.
        shutil.copy2(REPO / "docs" / "python.md", tests / "python.md")
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONPATH", "XDSLOOP_SERVER", "VIRTUAL_ENV")}
        env["PATH"] = f"{work / 'venv' / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        done = subprocess.run([python, "-m", "pytest", "-p", "no:cacheprovider", "-v",
                               "--rootdir", tests, tests], cwd=work, env=env, timeout=TIMEOUT_S)
        return done.returncode
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
