"""Scenario faults against gRPC's real xDS client (docs/scenarios.md): a corrupt EDS push is
NACKed and the calls stay where they were; a stream reset is survived (gRPC reconnects and
resubscribes, then follows the next push); a delayed push is shown held in /status while
gRPC still calls the old backend, then arrives and is ACKed; a CDS response without the
route's cluster (`flap`) is ACKed, and gRPC keeps its cached cluster (gRFC A88: a deletion of
a cached resource is an ambient error unless the bootstrap's server asks for
`fail_on_data_errors`), so the calls go on; endpoints a `withhold` kept from gRPC reach it as
soon as the rule goes; an EDS push sent under the CDS type URL is NACKed by gRPC as CDS and
/status files it there; `DELETE /scenario` then brings gRPC back to the served config with no
fixture edit. Each time, what /status says is compared with what gRPC did (its calls).

Each fault is installed through the admin API (`PUT /scenario`) of the running server and
removed again (`DELETE /scenario`); the flow in run.py calls `check_faults` once the normal
checks passed, with calls going to backend A.
"""

from __future__ import annotations

import json
import urllib.request

import fixture_edits as fx
from status_checks import fetch_status as fetch

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
    # Without `ignore_resource_deletion` A53's abstract has a CDS deletion fail the calls
    # bound for the cluster (A88's default of ignoring it is behind its env var); its return
    # is a cluster again, which the calls use (A27). Whether a call failed in the 2 s gap
    # (this client waits for ready) is reported.
    r.check("flap: once the cluster is back, calls reach B",
            *calls.wait_moved("B", since, push_timeout))
    made = calls.parse(calls.client.out.lines[since:])
    failed = [c for c in made if c != "B"]
    r.observe("flap", f"while {fx.CLUSTER_A} was out of CDS: " + (
        f"{len(failed)} of {len(made)} calls did not reach B ({sorted(set(failed))})"
        if failed else f"every call reached B ({len(made)} calls)"))
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

    check_delay(r, calls, admin, eds, ports, wait_status, push_timeout)
    check_flap(r, calls, admin, wait_status, push_timeout)
    check_withhold_released(r, calls, admin, eds, ports, wait_status, push_timeout)
    check_retyped_then_resync(r, calls, admin, eds, ports, wait_status, push_timeout)


def client_types(status: dict) -> dict:
    """The client's rows in /status by type alias ({} before its stream shows)."""
    for stream in status.get("streams", []):
        if stream.get("node_id") == CLIENT_NODE:
            return {t.get("type"): t for t in stream.get("types", [])}
    return {}


def check_delay(r, calls, admin: str, eds, ports: dict, wait_status, push_timeout) -> None:
    """The push moving calls to B is held 3s: /status says so while gRPC still calls A, the
    firing counts once in both counters, and once gRPC has it the row says when it went."""
    a, b = ports["A"], ports["B"]
    before = (fetch(admin) or {}).get("counters", {}).get("faults", 0)
    put_scenario(admin, rule("delay", "{ delay: 3s }"))
    since = calls.mark()
    fx.write_in_place(eds, fx.endpoints(b, b, f"{fx.CLUSTER_A} -> B (delayed)"))
    seen = {}

    def held(status: dict) -> str:
        eds_row = client_types(status).get("eds", {})
        sent = eds_row.get("last_sent") or {}
        rules = (status.get("scenario") or {}).get("rules", [])
        fired_n = rules[0].get("fired") if rules else None
        faults = status.get("counters", {}).get("faults", 0) - before
        if sent.get("held") and (sent.get("fault") or {}).get("action") == "delay":
            seen.update(held=sent["held"], fired=fired_n, faults=faults, state=eds_row["state"])
            return ""
        return f"eds: {eds_row}"
    ok, why = wait_status(admin, held, push_timeout)
    made = calls.parse(calls.client.out.lines[since:])
    r.check("delayed EDS push: while held, /status shows it held (since, until), PENDING, and "
            "gRPC is still calling A (it does not have it)",
            ok and seen.get("state") == "PENDING" and all(c == "A" for c in made),
            why or f"{seen}; {calls.describe(since)}")
    r.check("delayed EDS push: while held, the rule's fired and counters.faults agree (1)",
            seen.get("fired") == 1 and seen.get("faults") == 1, str(seen))
    r.check("delayed EDS push: calls move to B once it arrives",
            *calls.wait_moved("B", since, push_timeout + 3))

    def went_out(status: dict) -> str:
        sent = client_types(status).get("eds", {}).get("last_sent") or {}
        until = (seen.get("held") or {}).get("until", "~")
        if "held" not in sent and sent.get("at", "") >= until:
            return ""
        return f"last_sent {sent}, held until {until}"
    r.check("delayed EDS push: once sent, /status says when it went out (not when queued)",
            *wait_status(admin, went_out, push_timeout))
    delete_scenario(admin)


def check_withhold_released(r, calls, admin: str, eds, ports: dict, wait_status,
                            push_timeout) -> None:
    """Calls go to B when this starts. greeter-a's endpoints are withheld from the push that
    would move calls to A: gRPC keeps calling B. A new scenario without the rule (no fixture
    edit) serves them at once, and calls move to A."""
    a, b = ports["A"], ports["B"]
    put_scenario(admin, rule("withhold", f"{{ withhold: {{ names: [{fx.CLUSTER_A}] }} }}")
                 .replace("    times: 1\n", ""))
    since = calls.mark()
    fx.write_in_place(eds, fx.endpoints(a, a, f"{fx.CLUSTER_A} -> A (withheld)"))

    def withheld(status: dict) -> str:
        row = client_types(status).get("eds", {})
        names = (row.get("withheld") or {}).get("names", [])
        return "" if fx.CLUSTER_A in names and row.get("state") == "SYNCED" else f"eds: {row}"
    r.check(f"withhold: /status shows {fx.CLUSTER_A} withheld and eds SYNCED",
            *wait_status(admin, withheld, push_timeout))
    r.check("withhold: gRPC never got the withheld endpoints: calls stay on B",
            *calls.wait_steady("B", since, push_timeout))
    put_scenario(admin, "version: 1\nrules:\n  - id: interop-idle\n"
                        "    match: { node: nobody }\n    do: { drop: {} }\n")
    since = calls.mark()
    r.check("withhold removed (a scenario without it, no fixture edit): calls move to A",
            *calls.wait_moved("A", since, push_timeout))

    def released(status: dict) -> str:
        row = client_types(status).get("eds", {})
        ok = row.get("state") == "SYNCED" and "withheld" not in row
        return "" if ok else f"eds: {row}"
    r.check("withhold removed: /status shows eds SYNCED with nothing withheld",
            *wait_status(admin, released, push_timeout))
    delete_scenario(admin)


def check_retyped_then_resync(r, calls, admin: str, eds, ports: dict, wait_status,
                              push_timeout) -> None:
    """Calls go to A when this starts. The EDS push moving calls to B goes out as a CDS
    response: gRPC NACKs it as CDS, and /status files it there. `DELETE /scenario` then
    resyncs the stream: with no fixture edit, calls move to B."""
    a, b = ports["A"], ports["B"]
    nacks_before = (fetch(admin) or {}).get("counters", {}).get("nacks", 0)
    put_scenario(admin, rule("retype", "{ wrong_type_url: { in: response, type: cds } }"))
    since = calls.mark()
    fx.write_in_place(eds, fx.endpoints(b, b, f"{fx.CLUSTER_A} -> B (retyped)"))

    def filed_under_cds(status: dict) -> str:
        types = client_types(status)
        cds, eds_row = types.get("cds", {}), types.get("eds", {})
        sent = cds.get("last_sent") or {}
        nack = cds.get("last_nack") or {}
        ok = (cds.get("state") == "NACKED" and nack.get("nonce") == sent.get("nonce")
              and (sent.get("fault") or {}).get("action") == "wrong_type_url"
              and (eds_row.get("last_sent") or {}).get("nonce") != sent.get("nonce")
              and (eds_row.get("last_fault") or {}).get("rule") == "interop-retype"
              and status.get("counters", {}).get("nacks", 0) > nacks_before)
        return "" if ok else f"cds: {cds}; eds: {eds_row}"
    r.check("wrong type URL on the response: gRPC NACKs it as CDS, and /status files it under "
            "CDS (NACKED, the nonce gRPC answered), not under EDS",
            *wait_status(admin, filed_under_cds, push_timeout))
    made = calls.parse(calls.client.out.lines[since:])
    r.check("wrong type URL on the response: gRPC never applied those endpoints (no call "
            "reached B through it)", "B" not in made, calls.describe(since))
    since = calls.mark()
    delete_scenario(admin)
    r.check("DELETE /scenario resyncs the stream: with no fixture edit, calls move to B",
            *calls.wait_moved("B", since, push_timeout))

    def synced(status: dict) -> str:
        types = client_types(status)
        bad = {t: types.get(t, {}).get("state") for t in ("cds", "eds")
               if types.get(t, {}).get("state") != "SYNCED"}
        return "" if not bad else f"not SYNCED: {bad}"
    r.check("DELETE /scenario resyncs the stream: /status shows cds and eds SYNCED",
            *wait_status(admin, synced, push_timeout))
