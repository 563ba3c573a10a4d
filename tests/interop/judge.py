"""xdsloop-server's conformance judge over the whole run: /status counts every client-rule
violation it found since it started (docs/protocol.md, "What the server checks"), and gRPC's
client must have none. Standard library only."""

from __future__ import annotations

import json


def no_violations(status: dict | None) -> tuple[bool, str]:
    """(ok, why): no violation in `status`, else each one the document still lists."""
    if status is None:
        return False, "no /status answer"
    total = status.get("counters", {}).get("violations", 0)
    streams = status.get("streams", []) + status.get("recently_closed", [])
    found = [f"stream {s['id']}: {v['check']}: {v['message']}"
             for s in streams for v in s.get("violations", {}).get("last", [])]
    return total == 0, f"{total} violation(s) {status.get('violations')}: " + "; ".join(found)


def notices_a_violation(status: dict | None) -> tuple[bool, str]:
    """The check above, on a copy of `status` with one violation added, must fail: a check
    that cannot fail proves nothing."""
    if status is None:
        return False, "no /status answer"
    tampered = json.loads(json.dumps(status))
    tampered.setdefault("counters", {})["violations"] = 1
    tampered["violations"] = {"C4.ack-version": 1}
    ok, why = no_violations(tampered)
    return not ok, f"a /status with a violation passed the check: {why}"
