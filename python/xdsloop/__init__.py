"""xdsloop: a mock Envoy xDS control plane for tests of xDS clients.

`XdsServer` runs the `xdsloop-server` binary that this package installs, on a free loopback
port, serving a fixture directory or resources given as Python dicts, and says what each node
did with them::

    from xdsloop import XdsServer

    with XdsServer(resources=[cluster]) as server:
        ...  # point the client under test (node id "n1") at server.address
        ack = server.await_ack("n1", "cds")

The pytest plugin (registered through the `pytest11` entry point) gives tests the
`xds_server` and `xds_server_factory` fixtures and the `--xdsloop-server PATH` option.
"""

import importlib.metadata

from ._errors import FixtureRejected, ScenarioRefused, ServerFailed, WaitTimeout, XdsloopError
from ._journal import Ack, Event, Nack
from ._server import XdsServer, find_binary

try:
    __version__ = importlib.metadata.version("xdsloop")
except importlib.metadata.PackageNotFoundError:  # imported from a source tree, not installed
    __version__ = "0+unknown"

__all__ = [
    "Ack",
    "Event",
    "FixtureRejected",
    "Nack",
    "ScenarioRefused",
    "ServerFailed",
    "WaitTimeout",
    "XdsServer",
    "XdsloopError",
    "find_binary",
]
