"""Helpers for the installed package's tests: two gRPC backends in this process that answer
with their name, the resources that route `xds:///greeter` to one of them, and gRPC's xDS
client in a process of its own, bootstrapped at an `XdsServer`."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from concurrent import futures
from pathlib import Path
from typing import Iterator

import grpc
import pytest

from xdsloop import XdsServer

pytest_plugins = ["pytester"]

HERE = Path(__file__).resolve().parent
NODE = "python-package-test"
TARGET = "xds:///greeter"
TYPE = "type.googleapis.com/envoy.config."
# In a row, the calls that must agree before a test believes where the traffic goes.
RUN = 5
PUSH_TIMEOUT_S = 15.0


class _Name(grpc.GenericRpcHandler):
    def __init__(self, name: str) -> None:
        self.reply = name.encode()

    def service(self, handler_call_details):
        return grpc.unary_unary_rpc_method_handler(lambda _request, _context: self.reply)


@pytest.fixture(scope="session")
def backends() -> Iterator[dict[str, int]]:
    """Backends A and B on free loopback ports: {"A": port, "B": port}."""
    servers, ports = [], {}
    for name in ("A", "B"):
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        server.add_generic_rpc_handlers((_Name(name),))
        ports[name] = server.add_insecure_port("127.0.0.1:0")
        server.start()
        servers.append(server)
    yield ports
    for server in servers:
        server.stop(grace=None)


def greeter(port: int) -> list[dict]:
    """Listener `greeter` -> route -> cluster `greeter` (EDS over ADS) -> 127.0.0.1:port."""
    return [
        {"@type": TYPE + "listener.v3.Listener", "name": "greeter",
         "api_listener": {"api_listener": {
             "@type": "type.googleapis.com/envoy.extensions.filters.network."
                      "http_connection_manager.v3.HttpConnectionManager",
             "rds": {"route_config_name": "greeter-route",
                     "config_source": {"ads": {}, "resource_api_version": "V3"}},
             "http_filters": [{"name": "envoy.filters.http.router", "typed_config": {
                 "@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"}}],
         }}},
        {"@type": TYPE + "route.v3.RouteConfiguration", "name": "greeter-route",
         "virtual_hosts": [{"name": "greeter", "domains": ["*"],
                            "routes": [{"match": {"prefix": ""},
                                        "route": {"cluster": "greeter"}}]}]},
        {"@type": TYPE + "cluster.v3.Cluster", "name": "greeter", "type": "EDS",
         "lb_policy": "ROUND_ROBIN",
         "eds_cluster_config": {"eds_config": {"ads": {}, "resource_api_version": "V3"}}},
        endpoints(port),
    ]


def endpoints(port: int) -> dict:
    # gRPC drops localities without a load_balancing_weight.
    return {"@type": TYPE + "endpoint.v3.ClusterLoadAssignment", "cluster_name": "greeter",
            "endpoints": [{"locality": {"zone": "local"}, "load_balancing_weight": 1,
                           "lb_endpoints": [{"endpoint": {"address": {"socket_address": {
                               "address": "127.0.0.1", "port_value": port}}}}]}]}


class Calls:
    """The client's calls, as the backend names that answered (or `ERR:CODE`)."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc = proc
        self.lines: list[str] = []
        self.cond = threading.Condition()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in iter(self.proc.stdout.readline, ""):
            with self.cond:
                self.lines.append(line.strip())
                self.cond.notify_all()

    def answers(self, since: int = 0) -> list[str]:
        with self.cond:
            lines = self.lines[since:]
        out = []
        for line in lines:
            parts = line.split(" ", 3)
            if len(parts) >= 3:
                out.append(parts[2] if parts[1] == "OK" else f"ERR:{parts[2]}")
        return out

    def mark(self) -> int:
        with self.cond:
            return len(self.lines)

    def wait_run(self, name: str, since: int = 0, timeout: float = PUSH_TIMEOUT_S) -> bool:
        """Whether RUN calls in a row after `since` were answered by `name` within `timeout`."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                made = self.answers(since)
                if len(made) >= RUN and all(c == name for c in made[-RUN:]):
                    return True
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.cond.wait(left)

    def wait_count(self, count: int, since: int, timeout: float = PUSH_TIMEOUT_S) -> list[str]:
        deadline = time.monotonic() + timeout
        with self.cond:
            while len(self.answers(since)) < count and time.monotonic() < deadline:
                self.cond.wait(deadline - time.monotonic())
        return self.answers(since)[:count]


@pytest.fixture
def grpc_client(tmp_path: Path):
    """Starts gRPC's xDS client for `xds:///greeter` against a server: `grpc_client(server)`."""
    procs: list[subprocess.Popen] = []

    def start(server: XdsServer, node: str = NODE) -> Calls:
        bootstrap = tmp_path / f"bootstrap-{node}.json"
        bootstrap.write_text(json.dumps({
            "xds_servers": [{"server_uri": server.address,
                             "channel_creds": [{"type": "insecure"}],
                             "server_features": ["xds_v3"]}],
            "node": {"id": node, "locality": {"zone": "local"}},
        }))
        env = {"GRPC_XDS_BOOTSTRAP": str(bootstrap), "PATH": "/usr/bin:/bin"}
        proc = subprocess.Popen([sys.executable, str(HERE / "greeter_client.py"), TARGET],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                env=env)
        procs.append(proc)
        return Calls(proc)

    yield start
    for proc in procs:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
