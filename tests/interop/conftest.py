"""The interop run's session: the backends A and B, the run's work directory and the client the
recipes drive (options given by run.py). Servers come from the xdsloop plugin's
`xds_server_factory` in each test."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import pytest

import harness
import run
from harness import Proc


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--interop-work", default=None,
                     help="the run's work directory (fixture copies, bootstraps, each "
                          "server's log and transcript)")
    parser.addoption("--interop-client", choices=("grpcio", "grpc-js"), default="grpcio",
                     help="the xDS client of the recipes")


@dataclass
class Interop:
    python: Path
    work: Path
    client: str
    ports: dict
    procs: list = field(default_factory=list)


@pytest.fixture(scope="session")
def interop(request: pytest.FixtureRequest,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[Interop]:
    harness.install_cleanup()
    given = request.config.getoption("--interop-work")
    work = Path(given) if given else tmp_path_factory.mktemp("interop")
    # The backends and the clients run in this venv (pytest runs in it).
    python = Path(sys.executable)
    ports, backends = run.start_backends(python)
    session = Interop(python, work, request.config.getoption("--interop-client"), ports,
                      list(backends))
    try:
        yield session
    finally:
        for proc in reversed(session.procs):
            proc.stop()


@pytest.fixture
def clients(interop: Interop) -> Iterator[list[Proc]]:
    """The client processes a test starts: stopped after it, their output shown if it failed."""
    procs: list[Proc] = []
    try:
        yield procs
    finally:
        for proc in reversed(procs):
            proc.stop()
