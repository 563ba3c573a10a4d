"""The fixture texts the interop run writes over the copy of `fixtures/grpc`, and the ways an
editor writes them (rename over, in place, in several writes). Standard library only."""

from __future__ import annotations

import os
from pathlib import Path

# Names in fixtures/grpc that the run relies on; `check_fixture` fails early if they change.
LISTENER = "greeter"
ROUTE = "greeter-route"
CLUSTER_A = "greeter-a"
CLUSTER_B = "greeter-b"
# The ports fixtures/grpc uses for backends A and B; the copy gets the backends' real ports.
FIXTURE_PORT_A = 50051
FIXTURE_PORT_B = 50052
ENDPOINTS_FILE = "endpoints.yaml"
ROUTES_FILE = "routes.yaml"

EDS = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
RDS = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"


def copy_with_ports(source: Path, dest: Path, port_a: int, port_b: int) -> None:
    """Copies the fixture set, pointing the fixture's backend ports at the real backends."""
    for path in sorted(source.rglob("*")):
        target = dest / path.relative_to(source)
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        text = path.read_text()
        text = text.replace(str(FIXTURE_PORT_A), str(port_a))
        text = text.replace(str(FIXTURE_PORT_B), str(port_b))
        target.write_text(text)


def check_fixture(source: Path) -> str | None:
    """Why the fixture set doesn't fit this run, or None if it does."""
    endpoints = source / ENDPOINTS_FILE
    routes = source / ROUTES_FILE
    for path in (endpoints, routes):
        if not path.is_file():
            return f"{path} is missing"
    text = "\n".join(p.read_text() for p in source.rglob("*") if p.is_file())
    for needed in (LISTENER, ROUTE, CLUSTER_A, CLUSTER_B, str(FIXTURE_PORT_A),
                   str(FIXTURE_PORT_B)):
        if needed not in text:
            return f"{source} does not mention {needed!r}"
    return None


def _assignment(cluster: str, port: int, extra: str = "") -> str:
    # gRPC ignores localities without a load_balancing_weight, so every locality has one.
    return f"""\
- "@type": {EDS}
  cluster_name: {cluster}
  endpoints:
  - locality: {{zone: interop}}
    load_balancing_weight: 1
    lb_endpoints:
    - endpoint:
        address:
          socket_address: {{address: 127.0.0.1, port_value: {port}}}
{extra}"""


def endpoints(a_port: int, b_port: int, note: str) -> str:
    """Both assignments: cluster greeter-a on `a_port`, greeter-b on `b_port`."""
    return (f"# Written by tests/interop: {note}\n"
            + _assignment(CLUSTER_A, a_port) + _assignment(CLUSTER_B, b_port))


WRAPPER = "type.googleapis.com/envoy.service.discovery.v3.Resource"


def endpoints_with_ttl(a_port: int, b_port: int, ttl: str) -> str:
    """endpoints(), with greeter-a's assignment wrapped in a `Resource` with `ttl`."""
    inner = _assignment(CLUSTER_A, a_port).replace("- ", "  ", 1)
    inner = "".join("  " + line for line in inner.splitlines(keepends=True))
    wrapped = f'- "@type": {WRAPPER}\n  ttl: {ttl}\n  resource:\n{inner}'
    return (f"# Written by tests/interop: {CLUSTER_A} -> {a_port}, with a TTL of {ttl}\n"
            + wrapped + _assignment(CLUSTER_B, b_port))


def endpoints_bad_yaml(a_port: int, b_port: int) -> str:
    """Valid until the last line, which opens a flow sequence it never closes."""
    return endpoints(a_port, b_port, "broken: bad YAML") + "- cluster_name: [unclosed\n"


BOGUS_FIELD = "bogus_interop_field"


def endpoints_unknown_field(a_port: int, b_port: int) -> str:
    """Well-formed YAML with a field ClusterLoadAssignment doesn't have."""
    extra = f"    {BOGUS_FIELD}: 7\n"  # a key of the LocalityLbEndpoints entry
    return (f"# Written by tests/interop: broken: unknown field\n"
            + _assignment(CLUSTER_A, a_port, extra) + _assignment(CLUSTER_B, b_port))


def routes(cluster: str) -> str:
    """The route configuration the listener's RDS names, sending everything to `cluster`."""
    return f"""\
# Written by tests/interop: every call goes to {cluster}
- "@type": {RDS}
  name: {ROUTE}
  virtual_hosts:
  - name: {LISTENER}
    domains: ["*"]
    routes:
    - match: {{prefix: ""}}
      route: {{cluster: {cluster}}}
"""


def write_by_rename(path: Path, text: str) -> None:
    """How many editors save: a temp file beside the target, renamed over it."""
    temp = path.with_name(path.name + ".tmp")
    temp.write_text(text)
    os.replace(temp, path)


def write_in_place(path: Path, text: str, pieces: int = 1) -> None:
    """Truncate and rewrite the same inode, optionally in several writes."""
    step = max(1, -(-len(text) // pieces))
    with open(path, "w") as file:
        for start in range(0, len(text), step):
            file.write(text[start:start + step])
            file.flush()
