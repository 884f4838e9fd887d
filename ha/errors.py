"""Errors of high availability and persistence: the `HAError` branch of the tree in `engine.errors`.

```
HAError (engine.errors)
├─ NotLeader (engine.errors)    this node does not hold the notifier lease for the plan
├─ SnapshotCorrupt              a stored snapshot whose size or checksum does not match its meta
└─ SnapshotMissing              no stored snapshot has that id (or it belongs to another plan)
```

Imports nothing but `engine.errors`.
"""

from __future__ import annotations

from datetime import datetime

from engine.errors import HAError, NotLeader

__all__ = ["HAError", "NotLeader", "SnapshotCorrupt", "SnapshotMissing"]


class SnapshotCorrupt(HAError):
    """A snapshot's bytes are not the ones its meta describes; the message names the snapshot.

    `snapshot_id` is None for a snapshot refused before it was stored.
    """

    def __init__(self, plan: str, snapshot_id: int | None, created_at: datetime, problem: str) -> None:
        self.plan = plan
        self.snapshot_id = snapshot_id
        self.created_at = created_at
        self.problem = problem
        taken = created_at.strftime("%Y-%m-%d %H:%M:%S UTC")
        if snapshot_id is None:
            msg = f"snapshot of plan {plan!r} taken {taken} not stored: {problem}"
        else:
            msg = (
                f"snapshot {snapshot_id} of plan {plan!r} taken {taken} is corrupt: {problem}; "
                f"discard it (`cepheus snapshot discard {plan} --id {snapshot_id}`) to use an older one"
            )
        super().__init__(msg)


class SnapshotMissing(HAError):
    """No stored snapshot has the id asked for."""
