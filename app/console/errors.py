"""The console's errors: how it refuses a request, and how a service of the node refuses it.

```
CEPError (engine.errors)
└─ ConsoleError
   ├─ ApiError (actions; status, field, extra): the reply to a refused request, as JSON
   ├─ EntityError (entities; field): a request body that is not a valid entity
   └─ OnDemandRefused: an on-demand query the plan cannot take here (409)
```

`OnDemandRefused` lives here rather than with the node that raises it: the console catches
it, and imports nothing of `app.node` (an import contract says so). Imports only
`engine.errors`.
"""

from __future__ import annotations

from engine.errors import CEPError


class ConsoleError(CEPError):
    """Root of the console's errors: a request it refuses; the message says why."""


class OnDemandRefused(ConsoleError):
    """An on-demand query the plan cannot take here (a change of a plan run through an input
    log, whose members or recovery would not see it)."""
