"""Scenario faults against gRPC's real xDS client (docs/scenarios.md): a corrupt EDS push is
NACKed and the calls stay where they were; a stream reset is survived (gRPC reconnects and
resubscribes, then follows the next push); a delayed push still arrives and is ACKed; a CDS
response without the route's cluster (`flap`) is ACKed, and gRPC keeps its cached cluster
(gRFC A88: a deletion of a cached resource is an ambient error unless the bootstrap's server
asks for `fail_on_data_errors`), so the calls go on.

Each fault is installed through the admin API (`PUT /scenario`) of the running server and
removed again (`DELETE /scenario`); the flow in run.py calls `check_faults` once the normal
checks passed, with calls going to backend A.
"""

from __future__ import annotations

import json
import urllib.request

import fixture_edits as fx

CLIENT_NODE = "interop-client"
# A reset makes gRPC back off (about a second at first) before it reconnects.
RECONNECT_TIMEOUT_S = 30


def put_scenario(admin: str, text: str) -> dict:
    request = urllib.request.Request(f"http://{admin}/scenario", data=text.encode(), method="PUT")
    with urllib.request.urlopen(request, timeout=5) as response:
        return json.load(response)


def delete_scenario(admin: str) -> None:
    request = urllib.request.Request(f"http://{admin}/scenario", method="DELETE")
    urllib.request.urlopen(request, timeout=5).close()


def rule(kind: str, action: str) -> str:
    """One rule on the client's EDS responses, firing once."""
    return (f"version: 1\nrules:\n  - id: interop-{kind}\n"
            f"    match: {{ node: {CLIENT_NODE}, type: eds }}\n"
            f"    times: 1\n    do: {action}\n")


def fired(rule_id: str):
    """A /status verdict: "" once `rule_id` fired."""
    def verdict(status: dict) -> str:
        rules = (status.get("scenario") or {}).get("rules", [])
        found = [r for r in rules if r.get("id") == rule_id]
        return "" if found and found[0].get("fired", 0) >= 1 else f"scenario: {rules}"
    return verdict


def eds_nacked_by(rule_id: str):
    """A /status verdict: "" once the client's EDS NACK follows a response `rule_id` touched."""
    def verdict(status: dict) -> str:
        for stream in status.get("streams", []):
            if stream.get("node_id") != CLIENT_NODE:
                continue
            eds = next((t for t in stream.get("types", []) if t.get("type") == "eds"), {})
            fault = (eds.get("last_fault") or {}).get("rule")
            if eds.get("state") == "NACKED" and eds.get("last_nack") and fault == rule_id:
                return ""
            return f"eds: {eds}"
        return f"no stream from {CLIENT_NODE}"
    return verdict


def closed_by_fault(status: dict) -> str:
    closed = [s for s in status.get("recently_closed", []) if s.get("node_id") == CLIENT_NODE]
    if any("reset" in json.dumps(s.get("recent", [])) for s in closed):
        return ""
    return f"recently closed streams of {CLIENT_NODE}: {[s.get('id') for s in closed]}"


# The route's cluster leaves CDS for a period, once (SotW CDS: missing = deleted), then stays.
FLAP = ("version: 1\nrules:\n  - id: interop-flap\n"
        f"    match: {{ node: {CLIENT_NODE}, type: cds }}\n"
        f"    times: 1\n    do: {{ flap: {{ names: [{fx.CLUSTER_A}], period: 2s }} }}\n")


def cds_acked(flapped: bool):
    """A /status verdict: "" once the client's latest CDS ACK is of a flapped version (the
    response without the cluster) or, with `flapped` false, of the fixtures' own again."""
    def verdict(status: dict) -> str:
        for stream in status.get("streams", []):
            if stream.get("node_id") != CLIENT_NODE:
                continue
            cds = next((t for t in stream.get("types", []) if t.get("type") == "cds"), {})
            version = (cds.get("last_acked") or {}).get("version", "")
            rule = (cds.get("last_fault") or {}).get("rule")
            if ("-flap-" in version) == flapped and rule == "interop-flap":
                return ""
            return f"cds: {cds}"
        return f"no stream from {CLIENT_NODE}"
    return verdict


def check_flap(r, calls, admin: str, wait_status, push_timeout: float) -> None:
    """Calls go to B (through cluster greeter-a) when this starts."""
    put_scenario(admin, FLAP)
    since = calls.mark()
    r.check(f"flap: gRPC ACKs the CDS response without {fx.CLUSTER_A} (its own version)",
            *wait_status(admin, cds_acked(True), push_timeout + 2))
    r.check(f"flap: {fx.CLUSTER_A} is back and gRPC ACKs the fixtures' CDS version again",
            *wait_status(admin, cds_acked(False), push_timeout + 2))
    made = calls.parse(calls.client.out.lines[since:])
    r.check("flap: gRPC kept its cached cluster throughout (gRFC A88): every call reached B",
            bool(made) and all(c == "B" for c in made), calls.describe(since))
    r.check("flap: the rule fired once", *wait_status(admin, fired("interop-flap")))
    delete_scenario(admin)


def check_faults(r, calls, admin: str, eds, ports: dict, wait_status, push_timeout: float) -> None:
    a, b = ports["A"], ports["B"]

    # NACK: the push moving calls to B is corrupt; gRPC rejects it and keeps calling A.
    # gRPC applies the valid resources of a NACKed response: corrupt the one that moves calls.
    put_scenario(admin, rule("corrupt", f"{{ corrupt: {{ resource: {fx.CLUSTER_A} }} }}"))
    since = calls.mark()
    fx.write_in_place(eds, fx.endpoints(b, b, f"{fx.CLUSTER_A} -> B (corrupt)"))
    r.check("corrupt EDS push: gRPC NACKs it (/status: NACKED, last_fault interop-corrupt)",
            *wait_status(admin, eds_nacked_by("interop-corrupt")))
    r.check("corrupt EDS push: calls keep going to A (the last good endpoints)",
            *calls.wait_steady("A", since, push_timeout + 20 * 0.2))
    delete_scenario(admin)
    since = calls.mark()
    # New content (the same as the NACKed one would not be pushed again, S3).
    fx.write_in_place(eds, fx.endpoints(b, a, f"{fx.CLUSTER_A} -> B, {fx.CLUSTER_B} -> A"))
    r.check("after the scenario is removed, the next EDS push moves calls to B",
            *calls.wait_moved("B", since, push_timeout))

    # Reset: the push moving calls back to A is replaced by RST_STREAM; gRPC reconnects,
    # resubscribes and gets it on its new stream.
    put_scenario(admin, rule("reset", "{ reset: { scope: stream } }"))
    since = calls.mark()
    fx.write_in_place(eds, fx.endpoints(a, b, f"{fx.CLUSTER_A} -> A (reset)"))
    r.check("stream reset instead of an EDS push: the rule fired",
            *wait_status(admin, fired("interop-reset")))
    r.check("stream reset: the server lists the client's stream closed by the fault",
            *wait_status(admin, closed_by_fault))
    r.check("stream reset: gRPC reconnects, resubscribes and calls move to A",
            *calls.wait_moved("A", since, RECONNECT_TIMEOUT_S))
    delete_scenario(admin)

    # Delay: the push moving calls to B leaves 2s late; it still arrives and is ACKed.
    put_scenario(admin, rule("delay", "{ delay: 2s }"))
    since = calls.mark()
    fx.write_in_place(eds, fx.endpoints(b, b, f"{fx.CLUSTER_A} -> B (delayed)"))
    r.check("delayed EDS push: the rule fired", *wait_status(admin, fired("interop-delay")))
    r.check("delayed EDS push: calls move to B once it arrives",
            *calls.wait_moved("B", since, push_timeout + 2))
    delete_scenario(admin)

    check_flap(r, calls, admin, wait_status, push_timeout)
