"""Errors of the local input log, under the project's `CEPError`.

```
CEPError (engine.errors)
└─ InputLogError: the input log cannot do what was asked (closed, a position truncated, ...)
   ├─ InputLogCorrupt (path, offset): a record that is not a torn tail failed its check
   ├─ InputLogFull (plan, limit): appending would take a plan's log over its byte limit (also
   │  `Busy`: the bundle is refused as retryable)
   ├─ DiskFault (plan, path, errno, restart): the disk did not take a write or a flush (full, a
   │  quota, an I/O error, a flush that stalls); also `Busy`
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


class DiskFault(InputLogError, Busy):
    """The disk did not take a plan's record: the file system is full (ENOSPC), a quota is
    reached (EDQUOT), a write failed (EIO), or a flush has not finished for too long. Nothing
    of the record stays in the log and the caller refuses the bundle as retryable (`Busy`): the
    plan's log takes appends again once the disk does. `restart`: a flush failed, so what the
    log holds on disk is uncertain; it refuses appends until the node is restarted."""

    def __init__(
        self, plan: str, path: str, why: str, *, errno: int | None = None, restart: bool = False
    ) -> None:
        self.plan = plan
        self.path = path
        self.why = why
        self.errno = errno
        self.restart = restart
        then = (
            "restart the node once the disk is mended"
            if restart
            else "bundles for the plan are refused (their clients send them again) until the disk takes writes again"
        )
        super().__init__(f"input log of plan '{plan}': {why} ({path}); {then}")
