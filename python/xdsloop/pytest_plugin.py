"""The pytest plugin (entry point `pytest11`: active once the package is installed).

Fixtures:

- `xds_server`: an `XdsServer` for one test, serving what the test's `xdsloop` marker says
  (`@pytest.mark.xdsloop(fixtures="tests/fixtures")`, or `resources=[...]`, or any other
  keyword `XdsServer` takes); without a marker it serves no resources until the test writes
  some (`write_fixture`, `set_resources`).
- `xds_server_factory`: starts any number of servers in one test (a primary and a secondary
  for fallback tests): `xds_server_factory(name="primary", fixtures=...)`.

Every server of a test works in the test's `tmp_path` (its log `server.log` and transcript
`transcript.jsonl` stay there, as pytest keeps its last runs), and is stopped after the test.
When a test fails, its report gets a section per server with the log's last lines.

Option: `--xdsloop-server PATH` runs another `xdsloop-server` binary (also `XDSLOOP_SERVER`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Callable, Optional

import pytest

from ._server import LOG_TAIL_LINES, XdsServer

_SERVERS = pytest.StashKey[list]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("xdsloop")
    group.addoption("--xdsloop-server", metavar="PATH", default=None,
                    help="the xdsloop-server binary the xds_server fixtures run (default: the "
                         "one installed with the xdsloop package, or $XDSLOOP_SERVER)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "xdsloop(**kwargs): what the xds_server fixture serves (XdsServer's "
                   "keyword arguments: fixtures=DIR, resources=[...], scenario=..., args=[...])")


ServerFactory = Callable[..., XdsServer]


class _Servers:
    """The servers one test started, each in its own directory under the test's tmp_path."""

    def __init__(self, request: pytest.FixtureRequest, tmp_path: Path) -> None:
        self.request = request
        self.tmp_path = tmp_path
        self.binary: Optional[str] = request.config.getoption("--xdsloop-server")
        self.started: list[XdsServer] = request.node.stash.setdefault(_SERVERS, [])

    def start(self, name: Optional[str] = None, **kwargs: Any) -> XdsServer:
        name = name or ("xdsloop-server" if not self.started
                        else f"xdsloop-server-{len(self.started) + 1}")
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", name)
        kwargs.setdefault("binary", self.binary)
        kwargs.setdefault("workdir", self.tmp_path / slug)
        server = XdsServer(name=name, **kwargs)
        self.started.append(server)
        return server.start()

    def stop_all(self) -> None:
        for server in reversed(self.started):
            server.stop()


@pytest.fixture
def xds_server_factory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ServerFactory]:
    """Starts servers for this test: `xds_server_factory(name=..., fixtures=... | resources=...,
    **XdsServer keyword arguments)` returns a started `XdsServer`; all stop after the test."""
    servers = _Servers(request, tmp_path)
    try:
        yield servers.start
    finally:
        servers.stop_all()


@pytest.fixture
def xds_server(request: pytest.FixtureRequest, xds_server_factory: ServerFactory) -> XdsServer:
    """A started `XdsServer` serving what the test's `xdsloop` marker says (nothing without
    one): `@pytest.mark.xdsloop(fixtures="dir")` or `@pytest.mark.xdsloop(resources=[...])`."""
    marker = request.node.get_closest_marker("xdsloop")
    kwargs = dict(marker.kwargs) if marker else {}
    return xds_server_factory(**kwargs)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if report.when == "teardown" or not report.failed:
        return
    for server in item.stash.get(_SERVERS, []):
        if server.workdir is not None:
            report.sections.append((f"xdsloop-server log: {server.name}",
                                    server.log_tail(LOG_TAIL_LINES)))
