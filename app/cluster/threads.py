"""The member's background duties: `forever` runs one on a thread, `Locked` shares a pure
`ha` state machine between threads."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from adapters.throttle import Throttle

log = logging.getLogger(__name__)


def forever(
    stop: threading.Event,
    period: float,
    step: Callable[[], object],
    what: str,
    wake: threading.Event | None = None,
) -> None:
    """Run `step` every `period` s (and whenever `wake` is set) until `stop` is set; a failure is
    logged (at most every 10 s) and the loop goes on: a background duty that dies silently
    would look like a dead node."""
    failures = Throttle(10.0)
    while True:
        if wake is None:
            stop.wait(period)
        elif wake.wait(period):
            wake.clear()
        if stop.is_set():
            return
        try:
            step()
        except Exception:
            allowed, held = failures.allow()
            if allowed:
                log.exception("cluster: %s failed%s", what, f" ({held} more not shown)" if held else "")


class Locked:
    """A pure `ha` state machine shared by threads (heartbeats arrive on many, the role loop
    reads): every method call under one lock."""

    def __init__(self, inner: object) -> None:
        self._inner = inner
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if not callable(attr):
            return attr

        def locked(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                return attr(*args, **kwargs)

        return locked
