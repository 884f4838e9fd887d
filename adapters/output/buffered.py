"""`BufferedAdapter`: the bounded buffer, background writer, retry and counters every remote adapter shares.

A subclass says how to write one batch (`_write`) and, optionally, how to connect
(`_open`), check records at publish time (`_check`) and clean up (`_close`). This module
owns the rest:

* a bounded FIFO buffer. With `on_full = "block"` (the default) `publish` takes every record and
  the bound is kept by the caller: `room(timeout)` waits until the buffer is below
  `buffer_events`, and the node asks it before it takes a bundle from a client (backpressure: a
  full adapter stops acknowledgements, it never loses what was acknowledged); the buffer exceeds
  the bound by at most what the bundles admitted meanwhile produce. With `on_full = "drop"`
  `publish` appends what fits and refuses the rest (counted as overflow, logged at most every
  `overflow_log_seconds`), and `room` never waits: for operators who prefer loss to delay;
* one writer thread taking batches of up to `batch_events` records (records published
  with different fences never share a batch); a record leaves the buffer only once its
  batch is resolved, so the bound covers everything not yet written;
* under a steady stream (records arrived while the last batch was being written) the writer
  waits up to `linger_ms` for a full batch before it takes a smaller one: every batch costs
  the target a transaction and this process the Python around it, and records that trickle
  in while a write is under way would otherwise make many small ones. A writer that was idle
  takes what arrived at once, so a quiet adapter adds no latency;
* `RetryLater` from the subclass (target down): keep the batch, wait with exponential
  backoff from `retry_initial_ms` up to `retry_max_ms`, try again — nothing is lost while
  the buffer holds;
* `Refused` (target rejects the data): retry that batch one record at a time, so only the
  bad records are rejected (counted and logged);
* `FenceRaised`: discard the batch, counted as fenced;
* a `_write` that returns a number: that many records of the batch were already in the
  target (their origins said so) and are counted as skipped, the rest as written.

Each record keeps the run of origins it was published in (`Run`: one `Origin` for the
outputs of one input-log record, not one per record); `_write` gets the batch's runs, a run
that a batch boundary cut shifted to its first record in the batch.

A subclass that names each batch for its target (`align_runs`: the HTTP sink's idempotency
key) gets batches a replay cuts the same way: records with an origin never share a batch with
another run, and a run is cut where its indexes reach a multiple of `batch_events`, so the
same outputs make the same batches on every member and after every restart; and a batch that
failed is tried again as it was (`batch_first`: the sequence number of its first record in
this adapter, for records without origin).

Imports `engine.errors`, `formatters.config` and sibling modules only.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import islice, repeat
from operator import itemgetter
from typing import Any

from adapters.output.base import AdapterStats, AdapterStopped, Fence, Origin, Origins, Run, check_origins
from adapters.throttle import Throttle
from adapters.wording import counted
from engine.errors import AdapterError
from formatters.config import Settings

log = logging.getLogger(__name__)

MAX_LINGER_MS = 1000.0  # a linger is a wait for a fuller batch, not a flush interval
ON_FULL = ("block", "drop")  # what a full buffer does: push back on the input, or refuse records
_Span = tuple["Origin | None", int, int]  # a published run: (first origin or None, its first seq, count)
_Item = tuple[int, Any, "Fence | None", _Span]  # (sequence number, record, fence, the record's run)
_RECORD = itemgetter(1)


class RetryLater(AdapterError):
    """The target is unavailable; the batch stays and is retried after a backoff."""


class Refused(AdapterError):
    """The target refused the batch for good (bad data, not a failure of the target)."""


class FenceRaised(AdapterError):
    """The fence raised inside the write; the batch is discarded."""


@dataclass(frozen=True)
class Buffering:
    """How much to hold, how much to write at once, how to back off."""

    buffer_events: int = 100_000
    batch_events: int = 500
    linger_ms: float = 5.0  # under a steady stream, how long to wait for a full batch
    retry_initial_ms: int = 100
    retry_max_ms: int = 10_000
    overflow_log_seconds: float = 10.0
    on_full: str = "block"

    @classmethod
    def read(cls, settings: Settings) -> Buffering:
        d = cls()
        value = cls(
            buffer_events=settings.integer("buffer_events", d.buffer_events, minimum=1),
            batch_events=settings.integer("batch_events", d.batch_events, minimum=1),
            linger_ms=settings.number("linger_ms", d.linger_ms, minimum=0),
            retry_initial_ms=settings.integer("retry_initial_ms", d.retry_initial_ms, minimum=1),
            retry_max_ms=settings.integer("retry_max_ms", d.retry_max_ms, minimum=1),
            overflow_log_seconds=settings.number("overflow_log_seconds", d.overflow_log_seconds, minimum=0),
            on_full=settings.string("on_full", d.on_full, choices=ON_FULL),
        )
        if value.linger_ms > MAX_LINGER_MS:
            settings.fail("linger_ms", f"must be at most {MAX_LINGER_MS}, got {value.linger_ms:g}")
        if value.retry_max_ms < value.retry_initial_ms:
            settings.fail("retry_max_ms", f"must be at least retry_initial_ms ({value.retry_initial_ms})")
        return value

    def backoff(self, failures: int) -> float:
        """Seconds to wait after `failures` consecutive failures (1, 2, ...)."""
        exponent = max(0, min(failures - 1, 32))
        delay_ms: int = min(self.retry_max_ms, self.retry_initial_ms << exponent)
        return delay_ms / 1000.0


def _runs(batch: list[_Item]) -> list[Run]:
    """The runs of a batch, a run a batch boundary cut shifted to its first record here."""
    runs: list[Run] = []
    i, size = 0, len(batch)
    while i < size:
        seq, _, _, (origin, seq0, count) = batch[i]
        n = min(seq0 + count - seq, size - i)
        runs.append((None if origin is None else origin.nth(seq - seq0), n))
        i += n
    return runs


def check_fence(fence: Fence | None) -> None:
    """For a `_write` without a transaction: `FenceRaised` when the fence refuses the write."""
    if fence is not None:
        try:
            fence(None)
        except Exception as exc:  # noqa: BLE001 - the fence's verdict, whatever it raises
            msg = f"{type(exc).__name__}: {exc}"
            raise FenceRaised(msg) from exc


class BufferedAdapter:
    """Base of adapters that deliver from a bounded buffer on a writer thread."""

    kind = "buffered"
    align_runs = False  # batches a replay cuts the same way, retried as they were
    stop_grace_seconds = 2.0  # how long stop() waits for a writer stuck in a call to the target

    def __init__(
        self, name: str, buffering: Buffering, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        """`clock`: the seconds a linger is measured in (a test's, to move it by hand)."""
        self.name = name
        self.buffering = buffering
        self._clock = clock
        self._cond = threading.Condition()
        self._buffer: deque[_Item] = deque()
        self._seq = 0  # sequence number of the last accepted record
        self._resolved = 0  # every record up to this number is no longer pending
        self._isolate_through = 0  # records up to this number are written one at a time
        self.batch_first = 0  # the sequence number of the first record of the batch being written
        self._streaming = False  # records arrived while the last batch was written
        self._counts = {
            k: 0 for k in ("published", "written", "overflow", "rejected", "fenced", "skipped", "abandoned")
        }
        self._counts.update(errors=0, in_doubt=0)
        self._thread: threading.Thread | None = None
        self._closing = False
        self._stopped: bool | None = None  # the result of stop(), once stopped
        self._abort = threading.Event()
        self._opened = False
        self._blocks = buffering.on_full == "block"
        self._overflow_log = Throttle(buffering.overflow_log_seconds)
        self._failure_log = Throttle(10.0)
        self._reject_log = Throttle(10.0)

    # ---- subclass hooks -------------------------------------------------------------------

    def describe_target(self) -> str:
        return self.kind

    def _check(self, records: Sequence[Any]) -> None:
        """Raise `RecordError` if a record cannot be written by this adapter at all."""

    def _open(self) -> None:
        """Connect / prepare the target; raise `RetryLater` while it is unavailable."""

    def _write(self, records: list[Any], fence: Fence | None, origins: list[Run]) -> int | None:
        """Deliver `records` (all published with `fence`; `origins` the runs they form, in
        order, their counts adding up to the records) or raise `RetryLater`, `Refused` or
        `FenceRaised`.

        Returns how many of them were not written because the target already had them
        (counted as skipped); None or 0 when all were written.
        """
        raise NotImplementedError

    def _close(self) -> None:
        """Release connections; called on the writer thread when it ends."""

    def _count_in_doubt(self, n: int) -> None:
        with self._cond:
            self._counts["in_doubt"] += n

    # ---- the adapter API ------------------------------------------------------------------

    @property
    def stats(self) -> AdapterStats:
        with self._cond:
            return AdapterStats(**self._counts, pending=len(self._buffer))

    def start(self) -> None:
        with self._cond:
            if self._closing:
                msg = f"adapter {self.name} has been stopped; build a new one"
                raise AdapterStopped(msg)
            if self._thread is not None:
                return
            self._thread = threading.Thread(target=self._run, name=f"adapter-{self.name}", daemon=True)
            self._thread.start()

    def publish(
        self, records: Sequence[Any], fence: Fence | None = None, origins: Origins | None = None
    ) -> int:
        runs = check_origins(self.name, records, origins) or [(None, len(records))]
        self._check(records)
        with self._cond:
            if self._closing:
                msg = f"adapter {self.name} has been stopped; records can no longer be published"
                raise AdapterStopped(msg)
            before = len(self._buffer)
            accepted = (
                len(records)
                if self._blocks
                else max(0, min(len(records), self.buffering.buffer_events - before))
            )
            seq, at = self._seq, 0
            for origin, count in runs:  # one run per input-log record: the records go in C-level loops
                take = min(count, accepted - at)
                if take <= 0:
                    break
                span = (origin, seq + 1, take)
                self._buffer.extend(
                    zip(
                        range(seq + 1, seq + 1 + take),
                        islice(records, at, at + take),
                        repeat(fence),
                        repeat(span),
                    )
                )
                seq += take
                at += take
            self._seq = seq
            refused = len(records) - accepted
            self._counts["published"] += accepted
            self._counts["overflow"] += refused
            total_refused = self._counts["overflow"]
            # the writer waits for a first record, or lingers for a full batch: wake it for those
            # only (flush and stop wait for records to be resolved, not published)
            batch = self.buffering.batch_events
            if accepted and (before == 0 or before < batch <= before + accepted):
                self._cond.notify_all()
        if refused:
            allowed, held = self._overflow_log.allow()
            if allowed:
                log.warning(
                    "adapter %s: buffer full (%s waiting for %s); refused %s "
                    "(%d refused in total, %d overflow reports held back)",
                    self.name,
                    counted(self.buffering.buffer_events, "record"),
                    self.describe_target(),
                    counted(refused, "record"),
                    total_refused,
                    held,
                )
        return accepted

    def room(self, timeout: float) -> bool:
        """Wait up to `timeout` s until the buffer holds fewer than `buffer_events` records;
        whether it does. Never waits with `on_full = "drop"` (what does not fit is refused
        there) nor once the adapter is stopping (its successor takes the records)."""
        if not self._blocks:
            return True
        deadline = time.monotonic() + timeout
        limit = self.buffering.buffer_events
        with self._cond:
            while len(self._buffer) >= limit and not self._closing:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(remaining)
            return True

    def flush(self, timeout: float | None = None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            target = self._seq
            while self._resolved < target:
                if self._thread is None or not self._thread.is_alive():
                    return False  # nobody is writing
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._cond.wait(remaining)
            return True

    def stop(self, timeout: float | None = None) -> bool:
        with self._cond:
            if self._stopped is not None:
                return self._stopped
            self._closing = True
            self._cond.notify_all()
        flushed = self.flush(timeout)
        self._abort.set()
        with self._cond:
            self._cond.notify_all()
        thread = self._thread
        if thread is not None:
            thread.join(self.stop_grace_seconds if timeout is not None else None)
            if thread.is_alive():
                log.warning(
                    "adapter %s: writer still busy with %s at stop", self.name, self.describe_target()
                )
        with self._cond:
            left = len(self._buffer)
            if left:
                self._counts["abandoned"] += left
                self._buffer.clear()
                self._resolved = self._seq
                self._cond.notify_all()
            self._stopped = flushed
        if left:
            log.warning(
                "adapter %s: stopped with %s not written (abandoned)", self.name, counted(left, "record")
            )
        if thread is None:
            self._close()
        return flushed

    # ---- the writer thread ----------------------------------------------------------------

    def _run(self) -> None:
        try:
            self._loop()
        except Exception:  # a bug: say so loudly, the records stay counted as pending
            log.exception("adapter %s: writer thread failed", self.name)
        finally:
            try:
                self._close()
            except Exception:
                log.exception("adapter %s: close failed", self.name)
            with self._cond:
                self._cond.notify_all()

    def _next_batch(self) -> list[_Item]:
        """Up to a batch of records from the front, all of one fence: stepping a run at a time
        (the records of a run are together in the buffer and share their fence)."""
        buffer = self._buffer
        first = buffer[0]
        limit = 1 if first[0] <= self._isolate_through else self.buffering.batch_events
        aligned = self.align_runs
        if aligned:
            seq, _, _, (origin, seq0, count) = first
            if origin is not None:  # up to the run's end or its next index that is a multiple of the limit
                index = origin.index + seq - seq0
                return list(islice(buffer, min(seq0 + count - seq, limit - index % limit)))
        n, size = 0, len(buffer)
        while n < limit and n < size:
            seq, _, fence, (origin, seq0, count) = buffer[n]
            if fence is not first[2] or (aligned and origin is not None):
                break
            n += seq0 + count - seq
        return list(islice(buffer, min(n, limit)))

    def _linger(self) -> None:
        """Wait (holding `_cond`) up to `linger_ms` for a full batch, unless stopping."""
        if self.buffering.linger_ms <= 0:
            return
        deadline = self._clock() + self.buffering.linger_ms / 1000.0
        while len(self._buffer) < self.buffering.batch_events and not self._closing:
            remaining = deadline - self._clock()
            if remaining <= 0:
                return
            self._cond.wait(remaining)

    def _loop(self) -> None:
        failures = 0
        failed: list[_Item] | None = None  # an aligned batch to try again as it was
        while True:
            with self._cond:
                again = failed is not None and bool(self._buffer) and self._buffer[0][0] == failed[0][0]
                if (
                    not again
                    and self._streaming
                    and self._buffer
                    and self._buffer[0][0] > self._isolate_through
                ):
                    self._linger()
                while not self._buffer and not self._closing:
                    self._cond.wait()
                if self._abort.is_set() or not self._buffer:
                    return
                batch = failed if again and failed is not None else self._next_batch()
                failed = None
            records = list(map(_RECORD, batch))
            self.batch_first = batch[0][0]
            try:
                if not self._opened:
                    self._open_or_retry()
                skipped = self._write(records, batch[0][2], _runs(batch)) or 0
            except RetryLater as exc:
                failures += 1
                if self._retry_after(failures, exc):
                    return
                if self.align_runs:
                    failed = batch
                continue
            except FenceRaised as exc:
                log.warning(  # before resolving: a flush that returns finds the refusal logged
                    "adapter %s: fence refused the write of %s: %s",
                    self.name,
                    counted(len(batch), "record"),
                    exc,
                )
                self._resolve(batch, fenced=len(batch))
            except Exception as exc:  # Refused, or a bug in the subclass: isolate the bad records
                with self._cond:
                    self._counts["errors"] += 1
                if len(batch) > 1:
                    with self._cond:
                        self._isolate_through = batch[-1][0]
                    log.info(
                        "adapter %s: %s; writing those %s one by one",
                        self.name,
                        exc,
                        counted(len(batch), "record"),
                    )
                    continue
                self._resolve(batch, rejected=1)
                self._log_rejected(batch[0], exc)
            else:
                skipped = min(max(skipped, 0), len(batch))  # whatever a subclass says, the counts add up
                self._resolve(batch, written=len(batch) - skipped, skipped=skipped)
            if failures:
                log.info(
                    "adapter %s: %s is back after %s",
                    self.name,
                    self.describe_target(),
                    counted(failures, "failed attempt"),
                )
                failures = 0
                self._failure_log.reset()

    def _open_or_retry(self) -> None:
        try:
            self._open()
        except RetryLater:
            raise
        except Exception as exc:  # whatever stops us connecting is retried, never a reason to drop records
            msg = f"cannot prepare {self.describe_target()}: {exc}"
            raise RetryLater(msg) from exc
        self._opened = True

    def _retry_after(self, failures: int, exc: Exception) -> bool:
        """Count the failure, log it (rate-limited) and back off; True when stop() aborted the wait."""
        delay = self.buffering.backoff(failures)
        with self._cond:
            self._counts["errors"] += 1
            pending = len(self._buffer)
        allowed, held = self._failure_log.allow()
        if allowed:
            log.warning(
                "adapter %s: %s unavailable (%s); %s waiting, attempt %d, retrying in %.2fs%s",
                self.name,
                self.describe_target(),
                exc,
                counted(pending, "record"),
                failures,
                delay,
                f" ({held} similar reports held back)" if held else "",
            )
        return self._abort.wait(delay)

    def _log_rejected(self, item: _Item, exc: Exception) -> None:
        allowed, held = self._reject_log.allow()
        if allowed:
            log.error(
                "adapter %s: %s rejected record %r: %s%s",
                self.name,
                self.describe_target(),
                item[1],
                exc,
                f" ({held} more rejections held back)" if held else "",
                exc_info=not isinstance(exc, Refused),
            )

    def _resolve(self, batch: list[_Item], **outcomes: int) -> None:
        """Take `batch` off the buffer, counting its records as `outcomes` say (they add up to it)."""
        with self._cond:
            if not self._buffer or self._buffer[0][0] != batch[0][0]:
                return  # stop() abandoned the buffer meanwhile; those records are counted there
            for _ in batch:
                self._buffer.popleft()
            for outcome, n in outcomes.items():
                self._counts[outcome] += n
            self._resolved = batch[-1][0]
            self._streaming = bool(self._buffer)
            self._cond.notify_all()
