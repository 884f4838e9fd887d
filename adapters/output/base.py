"""The output adapter plug point: `OutputAdapter`, its counters, the HA fencing hook and `Origin`.

An output adapter takes records from a formatter and delivers them to a target (a
database table, a log, an HTTP endpoint). `publish` only enqueues; a background writer
delivers, retrying while the target is down. The counters say where every record went:

    published = written + rejected + fenced + skipped + abandoned + pending
    (overflowed records were never published: `publish` refused them)

Imports only `engine.errors`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, cast

from engine.errors import AdapterError, ConfigError

if TYPE_CHECKING:
    import sqlalchemy as sa


class Fence(Protocol):
    """HA fencing hook: called once per write with the adapter's transaction (the SQLAlchemy
    `Connection` of the write transaction for the RDBMS adapter, None for adapters without
    transactions); it raises to abort the write. See `OutputAdapter.publish`."""

    def __call__(self, transaction: sa.Connection | None, /) -> object: ...


_BIGINT = 2**63  # positions and indexes are stored as signed 64-bit integers
MAX_SOURCE = 200  # characters of `Origin.source` a target must be able to store
MAX_LOG_ID = 64


@dataclass(slots=True, unsafe_hash=True)  # not frozen: a frozen dataclass's __init__ costs twice
class Origin:  # as much, and nothing changes one once made
    """Where an output record came from: output `index` (0, 1, ...) of those that input-log record
    `position` of log `log_id` caused on `source`. A plan's journal names the plan as the
    source; the output hub names the route (`plan/stream/formatter`, `Origin.routed`) before an
    adapter sees it. Replays regenerate the same origins, so a target that records the last
    one it wrote can skip what it already has.

    The outputs of one input-log record on one route come in a run: one `Origin`, the first
    record's, stands for them all (`Run`), so none is made per record."""

    source: str  # up to 200 characters
    log_id: str  # up to 64 characters
    position: int
    index: int

    @property
    def sender(self) -> str:
        """Who its records name as their sender when they leave (`adapters.senders`): the route
        and its log, the same on every member of an HA group."""
        return f"{self.source}|{self.log_id}"

    def routed(self, source: str) -> Origin:
        """The same place in the log, on the route `source`."""
        return Origin(source, self.log_id, self.position, self.index)

    def problem(self) -> str | None:
        """Why a target cannot record this origin, or None when it can."""
        if not isinstance(self.source, str) or not 0 < len(self.source) <= MAX_SOURCE:
            return f"source must be a string of 1 to {MAX_SOURCE} characters"
        if self.source.endswith(" "):  # MySQL compares strings ignoring trailing spaces
            return "source must not end with a space"
        if not isinstance(self.log_id, str) or not 0 < len(self.log_id) <= MAX_LOG_ID:
            return f"log_id must be a string of 1 to {MAX_LOG_ID} characters"
        for field in ("position", "index"):
            value = getattr(self, field)
            if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < _BIGINT:
                return f"{field} must be an integer from 0 to 2**63 - 1"
        return None

    def follows(self, other: Origin | None) -> bool:
        """Whether a record of this origin is new after `other` was the last one written for its
        source: another log, or a later (position, index) in the same log."""
        if other is None or other.log_id != self.log_id:
            return True
        return (self.position, self.index) > (other.position, other.index)

    def nth(self, k: int) -> Origin:
        """The origin of record `k` (0, 1, ...) of the run this one starts."""
        return self if k == 0 else Origin(self.source, self.log_id, self.position, self.index + k)

    def covered(self, mark: Origin | None, count: int) -> int:
        """How many of the `count` records of the run this one starts are not past `mark` (the
        last origin written for the source): they come first, and a target skips them."""
        if mark is None or mark.log_id != self.log_id or self.position > mark.position:
            return 0
        if self.position < mark.position:
            return count
        return max(0, min(count, mark.index - self.index + 1))


Run: TypeAlias = tuple[Origin | None, int]
"""`count` consecutive records: (the first one's origin, or None for records without; count).
The others of a run with an origin have the same source, log and position and the next indexes."""

Origins: TypeAlias = Origin | Sequence[Origin | None]
"""What `publish` takes as `origins`: one `Origin`, the first record's (the others follow it
in a run, see `Run`), or one `Origin` (or None) per record."""


def per_record(runs: Sequence[Run]) -> list[Origin | None]:
    """One origin (or None) per record of `runs` (for tests and doubles: it makes one per record)."""
    return [None if origin is None else origin.nth(k) for origin, count in runs for k in range(count)]


_SOURCE_LOG = attrgetter("source", "log_id")
_POSITION = attrgetter("position")
_INDEX = attrgetter("index")


def _all_usable(listed: list[Any]) -> bool:
    """Whether every element is a usable `Origin`, checked with C-level loops (a plan's outputs
    come 50 or 500 to a call, of one or two sources): False sends the caller to the loop that
    names the first bad one."""
    if not listed or set(map(type, listed)) != {Origin}:
        return False
    if any(
        o.problem() is not None for o in dict(zip(map(_SOURCE_LOG, listed), listed, strict=True)).values()
    ):
        return False
    counts = [*map(_POSITION, listed), *map(_INDEX, listed)]
    return set(map(type, counts)) == {int} and min(counts) >= 0 and max(counts) < _BIGINT


def _counts(position: object, index: object) -> bool:
    return type(position) is int and type(index) is int and 0 <= position < _BIGINT and 0 <= index < _BIGINT


def check_origins(adapter: str, records: Sequence[Any], origins: Origins | None) -> list[Run] | None:
    """`origins` as runs covering `records`, or None when there are none; `RecordError` when
    a list is not parallel to the records or an origin is not usable."""
    if origins is None or not records:
        return None
    if isinstance(origins, Origin):
        problem = origins.problem()
        if problem is None and origins.index + len(records) > _BIGINT:
            problem = f"index + {len(records)} records must stay under 2**63"
        if problem is not None:
            msg = f"adapter {adapter}: origin {origins!r}: {problem}"
            raise RecordError(msg)
        return [(origins, len(records))]
    listed = list(origins)
    if len(listed) != len(records):
        msg = (
            f"adapter {adapter}: {len(listed)} origins for {len(records)} records; "
            "pass one origin (or None) per record, or the first record's origin alone"
        )
        raise RecordError(msg)
    if _all_usable(listed):
        return _one_run(cast("list[Origin]", listed)) or _runs(listed)
    checked: set[tuple[str, str]] = set()  # (source, log_id) pairs found usable: check their ints only
    for i, origin in enumerate(listed):
        if origin is None:
            continue
        if not isinstance(origin, Origin):
            problem = f"is a {type(origin).__name__}"
        elif (origin.source, origin.log_id) in checked and _counts(origin.position, origin.index):
            continue
        else:
            problem = origin.problem()
            if problem is None:
                checked.add((origin.source, origin.log_id))
        if problem is not None:
            msg = f"adapter {adapter}: origin {i} ({origin!r}): {problem}"
            raise RecordError(msg)
    return _runs(listed) if any(o is not None for o in listed) else None


def _one_run(listed: list[Origin]) -> list[Run] | None:
    """[(first, n)] when usable origins form one run (one source, log and position, indexes
    counting up by one), checked with C-level loops; else None."""
    first = listed[0]
    if len(set(map(_SOURCE_LOG, listed))) != 1 or len(set(map(_POSITION, listed))) != 1:
        return None
    if list(map(_INDEX, listed)) != list(range(first.index, first.index + len(listed))):
        return None
    return [(first, len(listed))]


def _runs(listed: list[Origin | None]) -> list[Run]:
    """Per-record origins folded into runs."""
    runs: list[Run] = []
    head: Origin | None = None
    count = 0
    for origin in listed:
        if count and (
            (origin is None and head is None)
            or (
                origin is not None
                and head is not None
                and origin.index == head.index + count
                and origin.position == head.position
                and origin.source == head.source
                and origin.log_id == head.log_id
            )
        ):
            count += 1
            continue
        if count:
            runs.append((head, count))
        head, count = origin, 1
    if count:
        runs.append((head, count))
    return runs


class AdapterConfigError(AdapterError, ConfigError):
    """An adapter's configuration is invalid; `.key` is the offending key (e.g. `columns[1].type`)."""

    def __init__(self, message: str, key: str | None = None) -> None:
        self.key = key
        super().__init__(message)


class AdapterStopped(AdapterError):
    """`publish` was called on an adapter that has been stopped."""


class RecordError(AdapterError):
    """A record the adapter cannot take (wrong shape, unknown column); `publish` refused the call."""


@dataclass(frozen=True)
class AdapterStats:
    """A consistent snapshot of one adapter's counters (records, unless noted)."""

    published: int = 0  # accepted by publish()
    written: int = 0  # delivered to the target
    overflow: int = 0  # refused by publish() because the buffer was full
    rejected: int = 0  # refused by the target for good (bad data); logged
    fenced: int = 0  # discarded because the fence raised (this node may no longer write)
    skipped: int = 0  # not written: the target already had them (a replay after a restart)
    abandoned: int = 0  # still pending when stop() gave up waiting
    errors: int = 0  # failed write attempts (each retry counts)
    in_doubt: int = 0  # records of writes whose commit was interrupted: retried, so possibly
    # written twice (not those with an origin in a target that records origins: exact)
    pending: int = 0  # in the buffer now

    @property
    def dropped(self) -> int:
        """Records that will never reach the target (not counting fenced ones)."""
        return self.overflow + self.rejected + self.abandoned


class OutputAdapter(Protocol):
    """What the node drives: start, publish (non-blocking), flush, stop; counters in `stats`."""

    name: str
    kind: str

    def start(self) -> None:
        """Start delivering (a background writer thread for buffered adapters). Idempotent."""

    def publish(
        self, records: Sequence[Any], fence: Fence | None = None, origins: Origins | None = None
    ) -> int:
        """Enqueue `records` in order and return how many were accepted; never blocks on the target.

        With `on_full = "block"` (the default) every record is taken (the caller keeps the bound
        with `room`); with `"drop"`, records beyond the buffer's free space are refused, counted
        in `stats.overflow` and logged (rate-limited). A record of the wrong shape refuses the whole call with
        `RecordError`; publishing after `stop` raises `AdapterStopped`.

        `fence` — the HA hook: when given, every write that includes these records first
        calls `fence(handle)` inside the same transaction (RDBMS: the SQLAlchemy
        `Connection`, so a lease-epoch check commits or rolls back together with the rows).
        If it raises, the write is rolled back and the records are discarded and counted in
        `stats.fenced` (the new notifier re-sends them from its journal). Database errors
        raised by the fence count as the database being down: the write is retried.

        `origins` — replay protection: None; one `Origin`, the first record's, the others
        having the next indexes (the outputs of one input-log record: a run, see `Run`); or
        one `Origin` (or None) per record, parallel to `records`. Another length refuses the
        call with `RecordError`, and so does an origin the target could not record (see
        `Origin.problem`). Records of one source come
        in increasing (position, index) order within one log. Adapters that can tell
        (RDBMS: a `cepheus_delivered` row per source, in the same transaction as the rows)
        skip records whose origin is not past the last one they wrote for its source,
        counted in `stats.skipped`; so a replay after a restart, or a retried commit, never
        writes a record with an origin twice. The others ignore origins and deliver the
        records again (at-least-once). Records without an origin are always delivered.
        """
        ...

    def room(self, timeout: float) -> bool:
        """Wait up to `timeout` s until the buffer is below its bound; whether it is.

        The node asks before it takes a bundle whose outputs may come here (backpressure): with
        `on_full = "block"` `publish` takes every record, and this is what keeps the buffer
        bounded; an adapter that drops what does not fit (`on_full = "drop"`) or holds nothing
        answers True at once.
        """
        ...

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every record published before the call is written (or rejected/fenced).

        True when none of them is still pending; False on timeout.
        """
        ...

    def stop(self, timeout: float | None = None) -> bool:
        """Flush for up to `timeout`, then stop the writer; records still pending are abandoned.

        Returns what the flush returned. Idempotent.
        """
        ...

    @property
    def stats(self) -> AdapterStats: ...
