"""gRPC's own CSDS (the `grpcio-csds` package, served by client.py) against xdsloop-server's
CSDS: what gRPC says it holds must be what xdsloop-server's ledger says it ACKed, version for
version and byte for byte. Standard library only; the queries run csds_query.py in the venv.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
# One query: a FetchClientStatus over loopback, well under a second when the peer is up.
QUERY_TIMEOUT_S = 20


def query(python: Path, addr: str) -> tuple[dict | None, str]:
    """One FetchClientStatus against `addr` (csds_query.py, in the venv): the answer, or why not."""
    argv = [str(python), str(HERE / "csds_query.py"), addr]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=QUERY_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None, f"CSDS at {addr} did not answer"
    if done.returncode != 0:
        return None, (done.stdout + done.stderr).strip()
    return json.loads(done.stdout), ""


def disagreement(grpc_view: dict, server_view: dict, node: str) -> str:
    """"" when every resource gRPC's CSDS says it ACKed is, on xdsloop-server's CSDS, ACKed and
    SYNCED by `node` at the same version with the same bytes, and the other way round."""
    theirs = [r for c in grpc_view["configs"] for r in c["resources"]]
    ours = [c for c in server_view["configs"] if c["node"] == node]
    if len(ours) != 1:
        return f"xdsloop-server's CSDS has {len(ours)} configs for {node}"
    acked = {(r["type_url"], r["name"]): r for r in theirs if r["client_status"] == "ACKED"}
    served = {(r["type_url"], r["name"]): r for r in ours[0]["resources"]}
    kinds = {t.rsplit(".", 1)[1] for t, _ in acked}
    if kinds != {"Listener", "RouteConfiguration", "Cluster", "ClusterLoadAssignment"}:
        return f"gRPC's CSDS ACKed only {sorted(kinds)}: {theirs}"
    if set(acked) != set(served):
        return f"gRPC ACKed {sorted(acked)}, xdsloop-server lists {sorted(served)}"
    for key, mine in acked.items():
        other = served[key]
        same = (other["client_status"], other["config_status"], other["version"],
                other["config_sha256"])
        if same != ("ACKED", "SYNCED", mine["version"], mine["config_sha256"]):
            return f"{key}: gRPC says {mine}, xdsloop-server says {other}"
    return ""


def tampered(view: dict, node: str) -> dict:
    """`view` with `node`'s first resource's version changed: the comparison must notice."""
    view = json.loads(json.dumps(view))
    for config in view["configs"]:
        if config["node"] == node and config["resources"]:
            config["resources"][0]["version"] += "-tampered"
    return view


def wait_agree(python: Path, addrs: tuple[str, str], node: str,
               timeout: float) -> tuple[bool, str]:
    """Both CSDS endpoints (gRPC's, xdsloop-server's), asked again until they agree (each side
    settles on its own)."""
    grpc_csds, server = addrs
    deadline, why = time.monotonic() + timeout, ""
    while True:
        grpc_view, why = query(python, grpc_csds)
        server_view, why_server = query(python, server)
        why = why or why_server
        if grpc_view and server_view:
            why = disagreement(grpc_view, server_view, node)
            if not why and not disagreement(grpc_view, tampered(server_view, node), node):
                return False, "the comparison did not notice a tampered version"
            if not why:
                return True, ""
        if time.monotonic() >= deadline:
            return False, why
        time.sleep(0.2)
