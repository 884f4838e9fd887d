"""Errors of the local input log, under the project's `CEPError`.

```
CEPError (engine.errors)
└─ InputLogError: the input log cannot do what was asked (closed, a position truncated, ...)
   ├─ InputLogCorrupt (path, offset): a record that is not a torn tail failed its check
   ├─ InputLogFull (plan, limit): appending would take a plan's log over its byte limit (also
   │  `Busy`: the bundle is refused as retryable)
   ├─ RecordError (records): a payload that passed its CRC but does not decode
   └─ SegmentDamaged (segments; offset, why): a record `segments.read` could not take
```

`InputLogError` is the package's base. Also raised here, outside it for now: the journal's
`NotLeading` and `BundleFailed` (`CEPError`), and the snapshot keeper's `SnapshotDeferred`
and `SnapshotTooLarge` (`HAError`, which their callers catch). Imports only `engine.errors`.
"""

from __future__ import annotations

from engine.errors import Busy, CEPError


class InputLogError(CEPError):
    """The input log cannot do what was asked (closed, a position already truncated, ...)."""


class InputLogCorrupt(InputLogError):
    """A record that is not a torn tail failed its check; the message names the file and offset."""

    def __init__(self, path: str, offset: int, why: str) -> None:
        self.path = path
        self.offset = offset
        super().__init__(
            f"input log {path}: corrupt record at byte offset {offset} ({why}); "
            "the records after it cannot be trusted: move the plan's log directory aside "
            "to start the plan without replay"
        )


class InputLogFull(InputLogError, Busy):
    """Appending would take a plan's log over its byte limit; the caller refuses the bundle."""

    def __init__(self, plan: str, size: int, limit: int) -> None:
        self.plan = plan
        self.limit = limit
        super().__init__(
            f"input log of plan '{plan}' is full: {size} bytes kept, limit {limit} bytes; "
            "it shrinks when a snapshot lets older records be truncated"
        )
