"""What each node did, read from the server's transcript (`--record`, schema
`xdsloop.transcript.v1`): every request and response of every stream since the server started,
so an await sees an ACK that came before it was called, as the Rust testkit's do."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

_PREFIX = "type.googleapis.com/"
# The short names the transcript uses for these types (proto/src/type_url.rs); any other type
# is written as its full type URL.
TYPE_ALIASES = {
    "cds": _PREFIX + "envoy.config.cluster.v3.Cluster",
    "eds": _PREFIX + "envoy.config.endpoint.v3.ClusterLoadAssignment",
    "lds": _PREFIX + "envoy.config.listener.v3.Listener",
    "rds": _PREFIX + "envoy.config.route.v3.RouteConfiguration",
    "srds": _PREFIX + "envoy.config.route.v3.ScopedRouteConfiguration",
    "vhds": _PREFIX + "envoy.config.route.v3.VirtualHost",
    "sds": _PREFIX + "envoy.extensions.transport_sockets.tls.v3.Secret",
    "rtds": _PREFIX + "envoy.service.runtime.v3.Runtime",
    "ecds": _PREFIX + "envoy.config.core.v3.TypedExtensionConfig",
}
_BY_URL = {url: alias for alias, url in TYPE_ALIASES.items()}


def type_name(name: str) -> str:
    """The transcript's name of a type given as an alias (`cds`) or a type URL."""
    return _BY_URL.get(name, name) if "/" in name else name.lower()


@dataclass(frozen=True)
class Event:
    """One transcript line: `kind` is `open`, `request`, `response`, `fault`, `violation`,
    `close` or `gap`; `fields` holds the whole line (docs/transcripts.md)."""

    index: int
    kind: str
    stream: int
    node: Optional[str]
    fields: dict[str, Any] = field(repr=False)

    def __getitem__(self, key: str) -> Any:
        return self.fields[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.fields.get(key, default)


@dataclass(frozen=True)
class Ack:
    """A node accepted a response: `version` is the version it now holds (SotW `version_info`,
    Delta `system_version_info`), `nonce` the response's, on stream `stream` at time `at`."""

    node: str
    type: str
    version: str
    nonce: str
    stream: int
    at: str


@dataclass(frozen=True)
class Nack:
    """A node rejected a response: `version` and `nonce` are the rejected response's, `code`
    and `message` the client's `error_detail`."""

    node: str
    type: str
    version: str
    nonce: str
    stream: int
    at: str
    code: int
    message: str


class Journal:
    """The transcript file, read as it grows (the server flushes it within 100 ms)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.events: list[Event] = []
        self._offset = 0
        self._partial = b""
        # (stream, type, nonce) -> the response line, to name the version an answer refers to.
        self._responses: dict[tuple[int, str, str], Event] = {}

    def refresh(self) -> None:
        try:
            with open(self.path, "rb") as f:
                f.seek(self._offset)
                chunk = f.read()
        except FileNotFoundError:
            return
        self._offset += len(chunk)
        data = self._partial + chunk
        lines = data.split(b"\n")
        # The last piece is a line still being written (or empty after a newline).
        self._partial = lines.pop()
        for raw in lines:
            if not raw.strip():
                continue
            line = json.loads(raw)
            if line.get("kind") == "header":
                continue
            event = Event(len(self.events), line.get("kind", ""), int(line.get("stream", 0)),
                          line.get("node"), line)
            self.events.append(event)
            if event.kind == "response":
                self._responses[(event.stream, line.get("type", ""), line.get("nonce", ""))] = event

    def mark(self) -> int:
        self.refresh()
        return len(self.events)

    def _answers(self, node: str, type_: str, verdict: str, since: int):
        for event in self.events[since:]:
            if event.kind == "request" and event.node == node and event.get("type") == type_ \
                    and event.get("verdict") == verdict:
                yield event

    def _answered(self, request: Event) -> Optional[Event]:
        return self._responses.get((request.stream, request.get("type", ""),
                                    request.get("nonce", "")))

    def find_ack(self, node: str, type_: str, version: Optional[str], since: int) -> Optional[Ack]:
        self.refresh()
        for request in self._answers(node, type_, "ack", since):
            response = self._answered(request)
            held = request.get("version")
            if held is None or "subscribe" in request.fields:  # Delta: the response's version
                held = (response.get("system_version") if response else None) or ""
            if version is None or held == version:
                return Ack(node, type_, held, request.get("nonce", ""), request.stream,
                           request.get("t", ""))
        return None

    def find_nack(self, node: str, type_: str, since: int) -> Optional[Nack]:
        self.refresh()
        for request in self._answers(node, type_, "nack", since):
            response = self._answered(request)
            rejected = ""
            if response is not None:
                rejected = response.get("version", response.get("system_version", "")) or ""
            detail = request.get("error_detail") or {}
            return Nack(node, type_, rejected, request.get("nonce", ""), request.stream,
                        request.get("t", ""), int(detail.get("code", 0)),
                        str(detail.get("message", "")))
        return None

    def requests(self, node: str) -> list[Event]:
        self.refresh()
        return [e for e in self.events if e.kind == "request" and e.node == node]

    def describe(self, node: str, type_: str, last: int = 8) -> str:
        """The node's last messages of that type, one line each, as an await's timeout says."""
        self.refresh()
        mine = [e for e in self.events if e.node == node and e.get("type") == type_
                and e.kind in ("request", "response", "fault")]
        if not mine:
            seen = sorted({e.node for e in self.events if e.node})
            return (f"it sent no {type_} request (nodes seen: {', '.join(seen) or 'none'})")
        return "its last {} messages:\n{}".format(
            type_, "\n".join("  " + _describe(e) for e in mine[-last:]))


def _describe(event: Event) -> str:
    head = f"stream {event.stream}: "
    if event.kind == "response":
        version = event.get("version", event.get("system_version", ""))
        count = len(event.get("resources") or [])
        fault = event.get("fault")
        by = f" [{fault.get('action')} by {fault.get('rule')}]" if fault else ""
        return (f"{head}push version {json.dumps(version)} nonce {json.dumps(event.get('nonce'))} "
                f"({count} resource{'s' if count != 1 else ''}){by}")
    if event.kind == "fault":
        return f"{head}fault {event.get('action')} by rule {event.get('rule')}"
    step = event.get("step", event.get("verdict", "request"))
    text = f"{head}{step}"
    if "version" in event.fields:
        text += f" version {json.dumps(event.get('version'))}"
    if event.get("nonce"):
        text += f" nonce {json.dumps(event.get('nonce'))}"
    detail = event.get("error_detail")
    if detail:
        text += f": {detail.get('message', '')}"
    return text
