"""The node's errors: what stops `cepheus server` from starting, with what to change."""

from __future__ import annotations

from engine.errors import CEPError


class NodeError(CEPError):
    """The node cannot start or run as configured; the message says what to change."""
