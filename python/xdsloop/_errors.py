"""What can go wrong, each an `XdsloopError`."""

from __future__ import annotations


class XdsloopError(Exception):
    """Base of every error this package raises."""


class ServerFailed(XdsloopError):
    """The server could not start, or exited; the message ends with its log's last lines."""


class WaitTimeout(XdsloopError, TimeoutError):
    """An await ran out of time; the message says what was awaited and what happened instead."""


class FixtureRejected(XdsloopError):
    """The server rejected a fixture edit (it keeps serving the last good snapshot); the message
    is the server's, with the file, line and column."""


class ScenarioRefused(XdsloopError):
    """`PUT /scenario` refused the rules (HTTP 400); the rules in force stay."""
