"""`NotifierFence`: what every write of a notifier's outputs passes through.

Two checks, both needed: the notifier's lease must hold on its own clock (`ha.lease.Holder`:
it stops `margin_ms` before the registry could grant the lease to another member), and a
database sink checks the lease's epoch inside the write's transaction
(`adapters.output.rdbms.epoch_fence.EpochFence`), which refuses a paused or cut-off old
notifier's late write whatever its clock says. Adapters without transactions get the first
check only (`transaction` is None).

Once the lease check refuses a write, the fence refuses every later one: the sinks keep a
high-water mark of what they wrote per log (`cepheus_delivered`, a receiving node's sender
marks), so a later record written before a refused one is delivered again would make the sink
skip the refused one as written. The notifier delivers what was refused again under a new
fence, in order (`ha.gate.OutputGate.redeliver`), once it holds the lease again.
"""

from __future__ import annotations

from collections.abc import Callable

import sqlalchemy as sa

from adapters.output.rdbms.epoch_fence import EpochFence
from engine.errors import NotLeader


class NotifierFence:
    def __init__(self, plan: str, epoch: int, holds: Callable[[], bool]) -> None:
        self.plan = plan
        self.epoch = epoch
        self._holds = holds
        self._sink = EpochFence(plan, epoch)
        self.lapsed = False  # it refused a write: it refuses every later one

    def __call__(self, transaction: sa.Connection | None) -> None:
        if self.lapsed or not self._holds():
            self.lapsed = True
            msg = f"this node no longer holds the notifier lease of plan {self.plan} (epoch {self.epoch})"
            raise NotLeader(msg)
        if transaction is not None:
            self._sink(transaction)
