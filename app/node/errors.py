"""The node's errors: what stops `cepheus server` from starting, with what to change, and what an
operation on a running node refuses.

```
CEPError (engine.errors)
├─ NodeError: the node cannot start or run as configured; the message says what to change
│  └─ UnknownPlan (name): no plan of that name is deployed on this node
└─ Busy (engine.errors)
   └─ OutputsFull (full, stream_id): an output adapter (or held outputs) the events feed is full
```

The refusal of an on-demand query (`OnDemandRefused`) is the console's: the node raises it
through the service it fills in (`app.console.errors`). Imports only `engine.errors`.
"""

from __future__ import annotations

from engine.errors import Busy, CEPError


class NodeError(CEPError):
    """The node cannot start or run as configured, or refuses an operation; the message says
    what to change."""


class UnknownPlan(NodeError):
    """No plan of that name is deployed on this node."""

    def __init__(self, name: str) -> None:
        self.name = name
        msg = f"plan {name!r} is not deployed on this node (see /health/details for those that are)"
        super().__init__(msg)


class OutputsFull(Busy):
    """An output adapter the events would feed, or a redundant plan's held outputs, holds as
    much as it may (its target is slow or down): the events were not taken; the client sends
    them again later."""

    def __init__(self, full: str, stream_id: str, waited: float) -> None:
        self.full = full
        self.stream_id = stream_id
        super().__init__(
            f"{full} is full (its target is slow or down); the events of {stream_id} were not "
            f"taken after waiting {waited:g} s: send them again later",
            retry_after=1.0,
        )
