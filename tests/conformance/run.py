#!/usr/bin/env python3
"""`make conformance`: the two binaries, `xdsloop-client check --fixtures` against
`xdsloop-server`, on a temp copy of fixtures/demo. Every check must pass and the directory must
be byte-identical afterwards.

Standard library only. The server gets `--listen 127.0.0.1:0` (its first stdout line names the
port); it is stopped by its pid, also when the run fails or is interrupted.
"""

from __future__ import annotations

import filecmp
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BIN_DIR = Path(os.environ.get("BIN_DIR", REPO / "target" / "debug"))
START_TIMEOUT_S = 30
# The suite's own bounded waits add up to well under a minute against a conforming server.
RUN_TIMEOUT_S = 300


def same_tree(a: Path, b: Path) -> list[str]:
    """Paths that differ between two directory trees (names and file contents)."""
    cmp = filecmp.dircmp(a, b)
    out = [f"only in one: {n}" for n in cmp.left_only + cmp.right_only]
    _, mismatch, errors = filecmp.cmpfiles(a, b, cmp.common_files, shallow=False)
    out += [f"differs: {n}" for n in mismatch + errors]
    for sub in cmp.common_dirs:
        out += [f"{sub}/{d}" for d in same_tree(a / sub, b / sub)]
    return out


def start_server(fixtures: Path, *flags: str) -> tuple[subprocess.Popen[str], str]:
    """xdsloop-server on `fixtures` (and `flags`), on a free port; the process and its address."""
    server = subprocess.Popen(
        [str(BIN_DIR / "xdsloop-server"), "--fixtures", str(fixtures), "--listen", "127.0.0.1:0",
         *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    # `xdsloop-server listening on 127.0.0.1:PORT`
    first = server.stdout.readline() if server.stdout else ""
    if "listening on" not in first:
        server.kill()
        sys.exit(f"xdsloop-server did not start: {first!r}")
    return server, first.split()[-1]


def stop_server(server: subprocess.Popen[str]) -> None:
    server.terminate()
    try:
        server.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.kill()


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="xdsloop-conformance-") as tmp:
        fixtures = Path(tmp) / "fixtures"
        shutil.copytree(REPO / "fixtures" / "demo", fixtures)
        server, addr = start_server(fixtures)
        try:
            command = [
                str(BIN_DIR / "xdsloop-client"), "check", "--server", addr,
                "--fixtures", str(fixtures), "--fixtures-subdir", "nodes/xdsloop-check",
            ]
            print("$ " + " ".join(command), flush=True)
            code = subprocess.run(command, timeout=RUN_TIMEOUT_S).returncode
        finally:
            stop_server(server)
        differences = same_tree(REPO / "fixtures" / "demo", fixtures)
        if differences:
            print("the fixture directory was not put back: " + "; ".join(differences))
            return 1
        if code != 0:
            print(f"xdsloop-client check exited {code}")
            return 1
        print("conformance: every check passed against xdsloop-server; the directory is as it was")
        return 0


if __name__ == "__main__":
    sys.exit(main())
