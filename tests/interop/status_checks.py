"""What the interop run reads in the server's /status: fetching it, polling it until a verdict
holds, and the verdicts themselves (each returns "" when fine, else what it saw instead)."""

from __future__ import annotations

import json
import time
import urllib.request

import fixture_edits as fx

PUSH_TIMEOUT_S = 10

CLIENT_NODE = "interop-client"
XDS_TYPES = ("lds", "rds", "cds", "eds")


def fetch_status(admin: str) -> dict | None:
    try:
        with urllib.request.urlopen(f"http://{admin}/status", timeout=2) as response:
            return json.load(response)
    except (OSError, ValueError):
        return None


def wait_status(admin: str, verdict, timeout: float = PUSH_TIMEOUT_S,
                fetch=fetch_status) -> tuple[bool, str]:
    """Polls the admin /status (an HTTP endpoint: there is no event to wait on) until
    `verdict(status)` returns "" (fine); otherwise reports its last complaint."""
    deadline, why = time.monotonic() + timeout, "no /status answer"
    while True:
        status = fetch(admin)
        if status is not None:
            why = verdict(status)
            if not why:
                return True, ""
        if time.monotonic() >= deadline:
            return False, why
        time.sleep(0.1)


def rejected_in_status(status: dict) -> str:
    reload = status.get("reload", {})
    if reload.get("ok") is False and str(reload.get("file", "")).endswith(fx.ENDPOINTS_FILE):
        return ""
    return f"/status reload is {reload}"


def client_synced(status: dict) -> str:
    """"" when the gRPC client's SotW stream ACKed the served version of every type."""
    streams = [s for s in status.get("streams", []) if s.get("node_id") == CLIENT_NODE]
    if len(streams) != 1 or streams[0].get("transport") != "ads-sotw":
        return f"expected one ads-sotw stream from {CLIENT_NODE}: {streams}"
    types = {t.get("type"): t for t in streams[0].get("types", [])}
    for name in XDS_TYPES:
        t = types.get(name, {})
        acked = (t.get("last_acked") or {}).get("version")
        if t.get("last_nack") or acked is None or acked != t.get("snapshot_version"):
            return f"{name}: {t}"
    return ""


def ttl_unbeaten(status: dict) -> str:
    """"" when gRPC's stream ACKed the served EDS version, no NACK, holding one TTL'd resource
    and sent no heartbeat."""
    streams = [s for s in status.get("streams", []) if s.get("node_id") == CLIENT_NODE]
    eds = [t for s in streams for t in s.get("types", []) if t.get("type") == "eds"]
    if len(eds) != 1:
        return f"expected one eds type on {CLIENT_NODE}'s streams: {streams}"
    t, beats = eds[0], eds[0].get("heartbeats") or {}
    acked = (t.get("last_acked") or {}).get("version")
    if t.get("last_nack") or acked != t.get("snapshot_version") \
            or (beats.get("ttl_resources"), beats.get("sent")) != (1, 0):
        return f"eds: {t}"
    return ""


FEDERATED_NODE = "interop-federated"
AUTHORITY = "xdsloop.test"
# The names gRPC subscribes to for xds:///greeter through the federation bootstrap: the cluster
# is written with its context parameters unsorted in the fixture (federation.yaml).
FEDERATED_CLUSTER = ("xdstp://xdsloop.test/envoy.config.cluster.v3.Cluster/"
                     "greeter-fed?app=greeter&zone=local")


def federated_synced(status: dict) -> str:
    """"" when the federated client's stream ACKed every type it was served, under xdstp names
    with sorted context parameters."""
    streams = [s for s in status.get("streams", []) if s.get("node_id") == FEDERATED_NODE]
    if len(streams) != 1:
        return f"expected one stream from {FEDERATED_NODE}: {streams}"
    types = {t.get("type"): t for t in streams[0].get("types", [])}
    if types.get("cds", {}).get("names") != [FEDERATED_CLUSTER]:
        return f"cds names: {types.get('cds')}"
    for name in XDS_TYPES:
        t = types.get(name, {})
        acked = (t.get("last_acked") or {}).get("version")
        names = t.get("names") or []
        if not names or not all(n.startswith(f"xdstp://{AUTHORITY}/") for n in names):
            return f"{name}: not subscribed by xdstp:// names: {t}"
        if t.get("last_nack") or acked is None or acked != t.get("snapshot_version"):
            return f"{name}: {t}"
    return ""
