"""The node's errors: what stops `cepheus server` from starting, with what to change, and what an
operation on a running node refuses.

```
CEPError (engine.errors)
└─ NodeError: the node cannot start or run as configured; the message says what to change
   └─ UnknownPlan (name): no plan of that name is deployed on this node
```

The refusal of an on-demand query (`OnDemandRefused`) is the console's: the node raises it
through the service it fills in (`app.console.errors`). Imports only `engine.errors`.
"""

from __future__ import annotations

from engine.errors import CEPError


class NodeError(CEPError):
    """The node cannot start or run as configured, or refuses an operation; the message says
    what to change."""


class UnknownPlan(NodeError):
    """No plan of that name is deployed on this node."""

    def __init__(self, name: str) -> None:
        self.name = name
        msg = f"plan {name!r} is not deployed on this node (see /health/details for those that are)"
        super().__init__(msg)
